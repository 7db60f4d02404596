function [row, col] = dphd_gumbel_argmax(logits)
  % Corrected mode: exact sampling of one entry with P proportional to exp(logits), done in
  % log space (Gumbel-max trick), so no weight ever under- or overflows.
  g = -log(-log(rand(size(logits))));
  [~, idx] = max(logits(:).' + g(:).');   % column-major linear index
  [row, col] = ind2sub(size(logits), idx);
end
