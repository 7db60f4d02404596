function D = dphd_data(Xt)
  % What a fit needs of a matrix, computed once when it arrives: the d x n matrix Xt (one
  % point per column, sparse or dense), the points' squared norms, and whether every entry is
  % a whole number (then a corrected-mode fit sums the rows exactly without flooring them).
  if issparse(Xt)
    v = nonzeros(Xt);
  else
    v = Xt(:);
  end
  D = struct('Xt', Xt, 'rowsq', full(sum(Xt .^ 2, 1)).', 'integral', all(v == round(v)));
end
