function sums = dphd_cluster_sums(Xt, lab, k, cnt, total)
  % k x d sums of the points (columns of Xt, d x n) by label lab (values 1..k), cnt the
  % cluster sizes. With total = sum(Xt, 2) of a matrix of whole numbers, the largest cluster's
  % sum is total minus the other clusters' sums: every partial sum is an integer a double
  % holds exactly, so this is the same result from the other clusters' points only (nothing
  % at all when every point is in one cluster, as paper-mode noise often leaves them).
  % Without total (or with total = []), every point is summed.
  n = columns(Xt);
  if nargin < 5 || isempty(total)
    sums = full(Xt * sparse(lab(:), (1:n).', 1, k, n).').';
    return;
  end
  [~, big] = max(cnt);
  others = find(lab(:) ~= big);
  sums = full(Xt * sparse(lab(others), others, 1, k, n).').';
  sums(big, :) = total.' - sum(sums, 1);
end
