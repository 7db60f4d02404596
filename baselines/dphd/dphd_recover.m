function [Z, L] = dphd_recover(Xt, lab, k, eps_rec, P, paper, L, tag)
  % Noisy cluster centres from an assignment lab (n x 1, values 1..k) of the points, the
  % columns of the sparse Xt (d x n) (recover.m).
  % paper = true: z_j = mean(X_Sj) + Laplace(rho*d/(eps |S_j|)) per coordinate, the authors'
  %   scale (the original code had rho/(eps |S_j|); the x d was added for the experiments), with
  %   the exact, NON-PRIVATE size |S_j|; an empty cluster gets z ~ U[-rho, rho]^d.
  % paper = false (corrected): the cluster sums and sizes are released separately and charged:
  %   Laplace(2 B1/eps_sum) on every entry of the k x d sums (replacing one row changes them
  %   by at most ||x||_1 + ||x'||_1 <= 2 B1 in L1, B1 the public row-L1 bound) and
  %   Laplace(2/eps_cnt) on the k sizes (one row leaves one cluster and joins another);
  %   z_j = noisy sum / max(noisy size, 1), projected onto the public data box [0, M]^d
  %   (post-processing). No x d factor, no private |S|.
  [d, n] = size(Xt);
  A = sparse(lab(:), (1:n).', 1, k, n);
  sums = full(Xt * A.').';
  cnt = full(sum(A, 2));
  if paper
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
  else
    eps_cnt = P.count_share * eps_rec;
    eps_sum = eps_rec - eps_cnt;
    noisy_sums = sums + dphd_laplace(2 * P.B1 / eps_sum, [k, d]);
    noisy_cnt = cnt + dphd_laplace(2 / eps_cnt, [k, 1]);
    Z = noisy_sums ./ max(noisy_cnt, 1);
    Z = min(max(Z, 0), P.M);
    L = dphd_log(L, [tag 'recover sums'], 'laplace', eps_sum, 2 * P.B1, 'sequential', ...
                 'k x d cluster sums, L1 sensitivity 2*B1 under replacement of one row');
    L = dphd_log(L, [tag 'recover sizes'], 'laplace', eps_cnt, 2, 'sequential', ...
                 'k cluster sizes, L1 sensitivity 2 under replacement of one row');
  end
end
