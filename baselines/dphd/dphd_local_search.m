function [U, L, info] = dphd_local_search(Y, Cand, k, eps_ls, Lam2, paper, L, tag)
  % Private local search for k-means over a candidate set (localsearch.m; Balcan et al. 2017,
  % Alg. 3), vectorised: W(j, i) = ||cand_j - y_i||^2; k centres drawn uniformly from the
  % candidates (duplicates allowed); T = min(k, 20) swap steps, each one exponential mechanism
  % over all (slot, candidate) swaps scored by the loss after the swap; finally one more
  % exponential mechanism picks one of the T recorded centre sets. T + 1 mechanisms in all,
  % eps_ls/(T + 1) each. Lam2 is the loss sensitivity Lambda^2 the caller chose.
  % paper = true: weights exp(-eps gain/(Lam2 (T+1))) with gain = new loss - current loss (no
  %   factor 1/2) and the authors' Octave sampler (underflow -> first entry, overflow -> last).
  % paper = false: utility -loss/Lam2 at range sensitivity sqrt(2): rows are non-negative
  %   with norm at most rho, so a replaced row y -> y' has ||G(y' - y)|| <= sqrt(2) ||G|| rho,
  %   and two centre sets' losses move apart by at most 2 (c' - c).(y' - y) <= 4 R sqrt(2)
  %   ||G|| rho <= sqrt(2) Lam2 (c, c' their nearest centres, R = max ||candidate||, Lam =
  %   ||G|| rho + R): weights exp(-eps loss/(sqrt(2) Lam2 (T+1))); every pick is drawn and
  %   charged in Python.
  m = rows(Cand);
  n = rows(Y);
  W = zeros(m, n);
  for t = 1:columns(Y)
    W = W + (Cand(:, t) - Y(:, t).') .^ 2;
  end
  ids = ceil(m * rand(k, 1));
  info.ids0 = ids;
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
      pick = dphd_mechanism('exponential', sprintf('%slocal search swap %d', tag, it), ...
                            eps_step, sqrt(2), note_corrected(k, m), -NL(:).' / Lam2);
      [a, b] = ind2sub([k, m], pick);
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
    it = dphd_mechanism('exponential', [tag 'local search final pick'], eps_step, sqrt(2), ...
                        sprintf('one of the %d recorded centre sets, utility -loss/Lambda^2', ...
                                T), -rec_loss(:).' / Lam2);
  end
  U = Cand(rec_ids(:, it), :);
  info.chosen_step = it;
  info.loss = rec_loss(it);
end

function note = note_corrected(k, m)
  note = sprintf(['one of %d x %d swaps (slot, candidate), utility -loss/Lambda^2 with ' ...
                  'Lambda = ||G|| rho + max ||candidate||'], k, m);
end
