function sel = dphd_select_round(losses, eps_sel)
  % Corrected mode: pick one of the rounds by an exponential mechanism with utility -loss_r,
  % the loss of round r in units of its per-row bound (dphd_fit.m), so each row adds a
  % number in [0, 1] to every loss: a replaced row moves each utility by at most 1 and the
  % difference of two by at most 2 (range sensitivity 2). Drawn and charged in Python.
  sel = dphd_mechanism('exponential', 'round selection', eps_sel, 2, ...
                       'utility -loss_r/(rho + min_j ||z_j||)^2 of each round', -losses(:).');
end
