function D = dphd_data(Xt, integral)
  % What a fit needs of a matrix, computed once when it arrives: the d x n matrix Xt (one
  % point per column, sparse or dense), the points' squared norms, whether every entry is a
  % whole number (then a corrected-mode fit sums the rows exactly without flooring them; the
  % caller may pass it, as Python knows it for less than Octave's pass costs), the sum of the
  % points (dphd_cluster_sums) and paper mode's data range max_i ||x_i - mu||
  % (clustering.m L11-17; the same for every fit).
  [d, n] = size(Xt);
  if issparse(Xt)
    rowsq = full(sum(Xt .^ 2, 1)).';
  else
    rowsq = sumsq(Xt, 1).';   % the same sums as sum(Xt .^ 2, 1), without the temporary
  end
  if nargin < 2
    if issparse(Xt)
      v = nonzeros(Xt);
    else
      v = Xt(:);
    end
    integral = all(v == round(v));
  end
  total = full(sum(Xt, 2));
  mu = total.' / n;
  dev = rowsq - 2 * full(mu * Xt).' + mu * mu.';
  D = struct('Xt', Xt, 'rowsq', rowsq, 'integral', logical(integral), 'total', total, ...
             'rho_data', sqrt(max(max(dev), 0)));
end
