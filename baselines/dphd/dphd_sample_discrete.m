function [row, col] = dphd_sample_discrete(W)
  % Paper mode: the authors' discrete sampler (sample_discrete.m), vectorised.
  % Draws u ~ U(0, sum(W)) and returns the first entry, in ROW-MAJOR order, whose running sum
  % reaches u. Octave edge cases kept on purpose, since they shape the published results:
  %  * sum(W) == 0 (every weight underflowed): u = 0, so the FIRST entry is returned;
  %  * sum(W) == Inf or NaN (a weight overflowed): random('unif',0,Inf) is NaN in
  %    Octave/statistics, no running sum reaches it, and the LAST entry is returned.
  [k, m] = size(W);
  total = sum(W(:));
  if ~isfinite(total)
    row = k; col = m;
    return;
  end
  u = total * rand();
  c = cumsum(reshape(W.', [], 1));   % row-major running sum
  idx = find(c >= u, 1);
  if isempty(idx)
    idx = k * m;
  end
  row = floor((idx - 1) / m) + 1;
  col = idx - (row - 1) * m;
end
