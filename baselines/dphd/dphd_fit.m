function R = dphd_fit(D, k, epsilon, T, M, B1, paper, trace, W)
  % DPHD (Balcan, Dick, Liang, Mou, Zhang, ICML 2017) as run in the DP-tauCC experiments:
  % T rounds of [JL projection -> candidate set -> private local search -> recover -> 3 Lloyd
  % steps with recover], then a choice among the rounds by their loss.
  % D (dphd_data.m): D.Xt d x n (one point per COLUMN; sparse or dense), D.rowsq the
  % points' squared norms, D.integral whether every entry is a whole number, D.rho_data the
  % largest distance of a point to the mean of the points.
  % M: bound on a count (side length s = 2M, range rho = M sqrt(d)); B1: public row-L1 bound
  % (corrected mode only). paper = true keeps every quirk of the authors' code and draws its
  % noise in Octave; paper = false is the corrected variant (see each function), whose
  % mechanisms are served by Python (dphd_mechanism.m).
  % R: centres of the selected round, the selected round, side lengths and candidate counts;
  % paper mode adds the labels, the centres they were assigned to, the losses and the log L
  % of its nominal charges (replayed by the Python wrapper). trace = true (tests) adds, per
  % round, the projection G, the candidates, the first centre set of the local search and
  % the round's centres. W (corrected mode, optional): 6 positive weights of a round's stages
  % (candidates, local search, initial recover, Lloyd 1, Lloyd 2, Lloyd 3), normalised; empty
  % or absent: the paper's proportions 2/3 : 1/12 : 1/6 : 3 x 1/6.
  Xt = D.Xt;
  rowsq = D.rowsq;
  [d, n] = size(Xt);
  L = struct('step', {{}}, 'mechanism', {{}}, 'epsilon', [], 'sensitivity', [], ...
             'composition', {{}}, 'note', {{}});
  if paper
    % range rho = maxval*sqrt(d), then rho = max(rho, max_i ||x_i - mu||) (clustering.m L11-17).
    P.rho = M * sqrt(d);
    P.total = [];               % the points' sum, for exact cluster sums (dphd_cluster_sums)
    if D.integral
      P.total = D.total;
    end
    if D.rho_data > P.rho
      P.rho = D.rho_data;
      L = dphd_log(L, 'range from data', 'none', Inf, NaN, 'non-private', ...
                   'rho raised to max_i ||x_i - mu||, read from the data (max_value too small)');
    end
    eps_r = epsilon / T;
    eps_sel = eps_r;            % the authors reuse eps_r, unbudgeted
    eps_p = eps_r / 3;          % candidate(2 eps_r/3) with T = 2: three calls of eps_r/3
    eps_ls = eps_r / 12;
    eps_rec = eps_r / 6;
    eps_lloyd = eps_r / 6;      % eps_r/(2 * nLloyd), nLloyd = 3
    Lam2 = (2 * P.rho / d) ^ 2; % Lambda = 2 rho/d
  else
    % Budget: 5% to the round selection (if T > 1), the rest split evenly over rounds; inside
    % a round the paper's proportions 2/3 : 1/12 : 1/6 : 3 x 1/6 normalised by 17/12, so the
    % ledger total is exactly epsilon (the authors' code spends 17/12 epsilon + selection).
    P.M = M;
    P.B1 = B1;
    P.rho = min(M * sqrt(d), B1);   % public L2 bound on a row
    P.count_share = 0.1;            % share of a recover budget spent on the cluster sizes
    eps_sel = 0.05 * epsilon * (T > 1);
    eps_r = (epsilon - eps_sel) / T;
    eps_p = eps_r * 8 / 17 / 3;
    eps_ls = eps_r / 17;
    if nargin >= 9 && ~isempty(W)
      W = W(:).' / sum(W);
      eps_p = eps_r * W(1) / 3;
      eps_ls = eps_r * W(2);
      eps_rec = eps_r * W(3);
      eps_lloyd = eps_r * W(4:6);
    else
      eps_rec = eps_r * 2 / 17;
      eps_lloyd = repmat(eps_r * 2 / 17, 1, 3);
    end
    % Cluster sums are released in units of a public power of two P.grid: 2^24 finer than
    % their noise scale (coarser only if needed so that every sum of n rows stays an exact
    % integer in a double). Each row is floored to the grid (a public per-row map, so rows
    % stay within their L1 bound B1); whole counts are multiples of a grid <= 1 already.
    b_sum = 2 * B1 / ((1 - P.count_share) * max([eps_rec, eps_lloyd]));
    P.grid = pow2(max(floor(log2(b_sum)) - 24, ceil(log2(n * B1)) - 52));
    if D.integral && P.grid <= 1
      % the same numbers as floor(Xt / P.grid), without a pass over Xt: the sums in data
      % units divided by the grid, exactly (dphd_recover)
      P.Xu = Xt;
      P.unit = P.grid;
      P.total = D.total;
    else
      P.Xu = floor(Xt / P.grid);
      P.unit = 1;
      P.total = full(sum(P.Xu, 2));
    end
  end
  s0 = 2 * M;
  side = s0;
  losses = zeros(T, 1);
  scales = zeros(T, 1);
  res = cell(T, 1);
  sides = zeros(T, 1);
  ncand = zeros(T, 1);
  tr = struct('G', {cell(T, 1)}, 'candidates', {cell(T, 1)}, 'ids0', {cell(T, 1)}, ...
              'centers', {cell(T, 1)});
  % 1. JL projection of each round, p = floor(ln(n)/2) (at least 1), G ~ N(0, 1/p); identity
  % if d <= 5. Nothing else draws from randn, so drawing the T matrices first gives each round
  % the G it drew at its start before, and one product projects the points for every round.
  p = max(1, floor(0.5 * log(n)));
  if d <= 5
    p = d;
    Gs = repmat({eye(d)}, T, 1);
  else
    Gs = cell(T, 1);
    for r = 1:T
      Gs{r} = randn(p, d) / sqrt(p);
    end
  end
  Yall = dphd_project(Xt, vertcat(Gs{:}));
  for r = 1:T
    tag = sprintf('round %d: ', r);
    G = Gs{r};
    Y = Yall(:, (r - 1) * p + (1:p));
    % 2. candidate set: 3 private partitions (1 unshifted, 2 randomly shifted).
    if paper
      [Cand, side, nlev] = dphd_candidates(Y, eps_p, side, true, 2, tag);
      L = dphd_log(L, [tag 'candidate set'], 'noisy-threshold', 2 * eps_r / 3, 1, ...
                   'sequential', sprintf(['nominal budget of candidate(2 eps_r/3); it runs 3 ' ...
                   'partition calls of eps_r/3 (levels run: [%s]) with eps_s = eps_p/(2 ln n) ' ...
                   'per level over < ln n levels: <= eps_r/2 in all if one point is added or ' ...
                   'removed, but up to eps_r under a changed cell (count sensitivity 2); only ' ...
                   'non-empty buckets are tested'], dphd_counts_text(nlev)));
    else
      Cand = dphd_candidates(Y, eps_p, s0, false, 2, tag);
      % Lambda bounds ||y - c|| for every projected row y = G x (||x|| <= rho) and candidate c
      Lam2 = (norm(G) * P.rho + max(sqrt(sum(Cand .^ 2, 2)))) ^ 2;
    end
    sides(r) = side;
    ncand(r) = rows(Cand);
    % 3. private local search in the projected space.
    [U, L, info] = dphd_local_search(Y, Cand, k, eps_ls, Lam2, paper, L, tag);
    % 4. assign in the projected space, recover in the original space.
    D = zeros(n, k);
    for t = 1:p
      D = D + (Y(:, t) - U(:, t).') .^ 2;
    end
    [~, lab] = min(D, [], 2);
    [Z, L] = dphd_recover(Xt, lab, k, eps_rec, P, paper, L, [tag 'initial ']);
    % 5. three Lloyd steps with recover.
    for it = 1:3
      Zprev = Z;
      lab = dphd_assign(Xt, rowsq, Z);
      [Z, L] = dphd_recover(Xt, lab, k, eps_lloyd(min(it, end)), P, paper, L, ...
                            sprintf('%sLloyd %d ', tag, it));
    end
    if paper
      % loss of the last assignment against the last centres; the clusters returned are the
      % assignment made at the start of the third Lloyd step (to the second step's centres).
      XZ = dphd_project(Xt, Z);
      cnt = accumarray(lab, 1, [k, 1]);
      losses(r) = sum(rowsq) - 2 * sum(XZ(sub2ind([n, k], (1:n).', lab))) ...
                  + sum(cnt .* sum(Z .^ 2, 2));
      res{r}.labels = lab;
      res{r}.Zlab = Zprev;
    else
      % loss of the nearest-centre assignment to the released centres, in units of its
      % per-row bound (rho + min_j ||z_j||)^2, a bound fixed by public quantities and DP
      % outputs: each row adds a number in [0, 1]. Used only by the round selection.
      [~, dmin] = dphd_assign(Xt, rowsq, Z);
      scales(r) = (P.rho + min(sqrt(sum(Z .^ 2, 2)))) ^ 2;
      losses(r) = sum(dmin) / scales(r);
    end
    res{r}.Z = Z;
    if trace
      tr.G{r} = G;
      tr.candidates{r} = Cand;
      tr.ids0{r} = info.ids0;
      tr.centers{r} = Z;
    end
  end
  % 6. round selection.
  if paper
    sel = dphd_sample_discrete(exp(-eps_sel * losses / 12));
    L = dphd_log(L, 'recover cluster sizes', 'none', Inf, NaN, 'non-private', ...
                 'recover scales its noise by the exact cluster sizes |S| (read from the data)');
    if T > 1
      L = dphd_log(L, 'round selection', 'none', Inf, NaN, 'non-private', ...
                   'exp(-eps_r*loss/12) over the rounds: unbudgeted, loss sensitivity is not 12');
    end
    L = dphd_log(L, 'labels and losses', 'none', Inf, NaN, 'non-private', ...
                 ['the released labels and k-means losses are computed from the raw rows ' ...
                  'after the last mechanism']);
    R.labels = res{sel}.labels;
    R.label_centers = res{sel}.Zlab;
    R.loss = losses(sel);
    R.round_losses = losses;
  elseif T > 1
    sel = dphd_select_round(losses, eps_sel);
  else
    sel = 1;
  end
  R.centers = res{sel}.Z;
  R.selected_round = sel;
  R.side_lengths = sides;
  R.n_candidates = ncand;
  R.log = L;
  if trace
    R.trace = tr;
  end
end
