function [lab, dmin] = dphd_assign(Xt, rowsq, Z)
  % Nearest centre in the original space for every point (column) of Xt (d x n, sparse or
  % dense), centres Z (k x d): ||x||^2 - 2 x.z + ||z||^2 from one product (dphd_project).
  % Ties go to the first centre, like the authors' strict-< loop. dmin: the squared distance
  % to the chosen centre.
  D = rowsq - 2 * dphd_project(Xt, Z) + sum(Z .^ 2, 2).';
  [dmin, lab] = min(D, [], 2);
  dmin = max(dmin, 0);
end
