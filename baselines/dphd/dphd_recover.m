function [Z, L, rel] = dphd_recover(Xt, lab, k, eps_rec, P, paper, L, tag)
  % Noisy cluster centres from an assignment lab (n x 1, values 1..k) of the points, the
  % columns of Xt (d x n) (recover.m).
  % paper = true: z_j = mean(X_Sj) + Laplace(rho*d/(eps |S_j|)) per coordinate, the authors'
  %   scale (the original code had rho/(eps |S_j|); the x d was added for the experiments), with
  %   the exact, NON-PRIVATE size |S_j| and Octave's float Laplace noise; an empty cluster gets
  %   z ~ U[-rho, rho]^d.
  % paper = false (corrected): two integer releases, drawn and charged in Python:
  %   * the k x d cluster sums of the rows floored to the public grid P.grid, in grid units
  %     (P.Xu / P.unit: floor(Xt / P.grid), or whole counts divided by the grid exactly, a
  %     power of two), with discrete Laplace noise: replacing one row changes
  %     them by at most ||x||_1 + ||x'||_1 <= 2 B1 in L1, i.e. 2 B1/P.grid units (B1 the
  %     public row-L1 bound); share 1 - P.count_share of eps_rec;
  %   * the k cluster sizes with discrete Laplace noise, L1 sensitivity 2 (one row leaves one
  %     cluster and joins another); share P.count_share.
  %   z_j = noisy sum * P.grid / max(noisy size, 1), projected onto the public box [0, M]^d:
  %   post-processing of integers, so the centres' possible values do not depend on the data.
  %   No x d factor, no private |S|. rel (tests) holds both noisy releases.
  % P.total (optional): the sum of the points whose clusters are summed (P.Xu in corrected
  % mode), for dphd_cluster_sums.
  [d, n] = size(Xt);
  cnt = accumarray(lab(:), 1, [k, 1]);
  total = [];
  if isfield(P, 'total')
    total = P.total;
  end
  if paper
    sums = dphd_cluster_sums(Xt, lab, k, cnt, total);
    Z = zeros(k, d);
    for j = 1:k
      if cnt(j) == 0
        Z(j, :) = -P.rho + 2 * P.rho * rand(1, d);
      else
        scale = P.rho * d / (eps_rec * cnt(j));
        Z(j, :) = sums(j, :) / cnt(j) + dphd_laplace(scale, [1, d]);
      end
    end
    L = dphd_log(L, [tag 'recover'], 'laplace', eps_rec, P.rho * d, 'parallel', ...
                 'per cluster, scale rho*d/(eps*|S|) with the exact cluster size |S|');
    rel = struct();
  else
    eps_cnt = P.count_share * eps_rec;
    eps_sum = eps_rec - eps_cnt;
    sums = dphd_cluster_sums(P.Xu, lab, k, cnt, total) / P.unit;
    rel.sums = dphd_mechanism('discrete-laplace', [tag 'recover sums'], eps_sum, ...
                              2 * P.B1 / P.grid, sprintf(['k x d cluster sums in units of ' ...
                              '2^%d, L1 sensitivity 2 B1 under replacement of one row'], ...
                              log2(P.grid)), sums);
    rel.sizes = dphd_mechanism('discrete-laplace', [tag 'recover sizes'], eps_cnt, 2, ...
                               'k cluster sizes, L1 sensitivity 2 under replacement of one row', ...
                               cnt);
    Z = (rel.sums * P.grid) ./ max(rel.sizes, 1);
    Z = min(max(Z, 0), P.M);
  end
end
