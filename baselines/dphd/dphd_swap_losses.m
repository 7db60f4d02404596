function NL = dphd_swap_losses(W, ids)
  % k-means loss of every single swap, in matrix form: NL(a, b) = sum_i min over the centre
  % set ids with ids(a) := b of W(., i), for W (m candidates x n points, squared distances).
  % Uses each point's best and second-best current slot, so one swap costs one m x n min.
  k = numel(ids);
  [m, n] = size(W);
  Wc = W(ids, :);
  [m1, a1] = min(Wc, [], 1);
  Wc(sub2ind([k, n], a1, 1:n)) = Inf;
  m2 = min(Wc, [], 1);
  NL = zeros(k, m);
  for a = 1:k
    base = m1;
    own = (a1 == a);
    base(own) = m2(own);
    NL(a, :) = sum(min(W, base), 2).';
  end
end
