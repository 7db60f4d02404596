function [U, L, info] = dphd_local_search(Y, Cand, k, eps_ls, Lam2, paper, L, tag)
  % Private local search for k-means over a candidate set (localsearch.m; Balcan et al. 2017,
  % Alg. 3), vectorised: W(j, i) = ||cand_j - y_i||^2; k centres drawn uniformly from the
  % candidates (duplicates allowed); T = min(k, 20) swap steps, each one exponential mechanism
  % over all (slot, candidate) swaps scored by the loss after the swap; finally one more
  % exponential mechanism picks one of the T recorded centre sets. T + 1 mechanisms in all,
  % eps_ls/(T + 1) each. Lam2 is the loss sensitivity Lambda^2 the caller chose.
  % paper = true: weights exp(-eps gain/(Lam2 (T+1))) with gain = new loss - current loss (no
  %   factor 1/2) and the authors' Octave sampler (underflow -> first entry, overflow -> last).
  % paper = false: utility -loss with range Lam2 that can move both ways under a changed row,
  %   so the factor 1/2: weights exp(-eps loss/(2 Lam2 (T+1))), sampled in log space.
  m = rows(Cand);
  n = rows(Y);
  W = zeros(m, n);
  for t = 1:columns(Y)
    W = W + (Cand(:, t) - Y(:, t).') .^ 2;
  end
  ids = ceil(m * rand(k, 1));
  T = min(k, 20);
  eps_step = eps_ls / (T + 1);
  rec_ids = zeros(k, T);
  rec_loss = zeros(T, 1);
  loss = sum(min(W(ids, :), [], 1));
  for it = 1:T
    NL = dphd_swap_losses(W, ids);
    if paper
      [a, b] = dphd_sample_discrete(exp(-eps_ls * (NL - loss) / (Lam2 * (T + 1))));
    else
      [a, b] = dphd_gumbel_argmax(-(eps_step / (2 * Lam2)) * NL);
    end
    ids(a) = b;
    loss = sum(min(W(ids, :), [], 1));
    rec_loss(it) = loss;
    rec_ids(:, it) = ids;
  end
  if paper
    it = dphd_sample_discrete(exp(-eps_ls * rec_loss / (Lam2 * (T + 1))));
    note = sprintf(['%d exponential mechanisms (%d swaps + 1 final pick) with weights ' ...
                    'exp(-eps*gain/(Lambda^2 (T+1))), no factor 1/2; Lambda = 2*rho/d is not ' ...
                    'a valid bound on the loss change'], T + 1, T);
    L = dphd_log(L, [tag 'local search'], 'exponential', eps_ls, Lam2, 'sequential', note);
  else
    it = dphd_gumbel_argmax(-(eps_step / (2 * Lam2)) * rec_loss);
    for s = 1:T + 1
      if s <= T
        what = sprintf('swap %d', s);
      else
        what = 'final pick';
      end
      L = dphd_log(L, sprintf('%slocal search %s', tag, what), 'exponential', eps_step, ...
                   Lam2, 'sequential', ...
                   'utility -loss, range sensitivity Lambda^2 = (R_y + R_c)^2, weights exp(eps u/(2 Lambda^2))');
    end
  end
  U = Cand(rec_ids(:, it), :);
  info.chosen_step = it;
  info.loss = rec_loss(it);
end
