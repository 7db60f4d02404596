function dphd_main(inpath, outpath)
  % Entry point for the Python wrapper: read the fit's inputs from inpath (.mat: sparse X n x d,
  % k, epsilon, n_rounds, max_value, row_l1_bound, mode, seed_rand, seed_randn), seed Octave's
  % generators, run dphd_fit and write the results to outpath (.mat, v6).
  S = load(inpath);
  rand('state', double(S.seed_rand));
  randn('state', double(S.seed_randn));
  paper = strcmp(strtrim(char(S.mode)), 'paper');
  X = S.X;
  if ~issparse(X)
    X = sparse(double(X));
  end
  R = dphd_fit(X, double(S.k), double(S.epsilon), double(S.n_rounds), double(S.max_value), ...
               double(S.row_l1_bound), paper);
  labels = R.labels;
  centers = R.centers;
  label_centers = R.label_centers;
  loss = R.loss;
  round_losses = R.round_losses;
  selected_round = R.selected_round;
  side_lengths = R.side_lengths;
  n_candidates = R.n_candidates;
  log_step = R.log.step;
  log_mechanism = R.log.mechanism;
  log_epsilon = R.log.epsilon;
  log_sensitivity = R.log.sensitivity;
  log_composition = R.log.composition;
  log_note = R.log.note;
  save('-v6', outpath, 'labels', 'centers', 'label_centers', 'loss', 'round_losses', ...
       'selected_round', 'side_lengths', 'n_candidates', 'log_step', 'log_mechanism', ...
       'log_epsilon', 'log_sensitivity', 'log_composition', 'log_note');
end
