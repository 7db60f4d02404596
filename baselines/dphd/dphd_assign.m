function [lab, dmin] = dphd_assign(Xt, rowsq, Z)
  % Nearest centre in the original space for every point (column) of the sparse Xt (d x n),
  % centres Z (k x d): ||x||^2 - 2 x.z + ||z||^2 from one sparse product. Ties go to the first centre,
  % like the authors' strict-< loop. dmin: the squared distance to the chosen centre.
  D = rowsq - 2 * full(Z * Xt).' + sum(Z .^ 2, 2).';
  [dmin, lab] = min(D, [], 2);
  dmin = max(dmin, 0);
end
