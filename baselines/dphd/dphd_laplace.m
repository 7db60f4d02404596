function z = dphd_laplace(scale, sz)
  % Laplace(0, scale) variates of size sz, built from base Octave only:
  % an exponential variate -scale*log(U) with a random sign (no Octave Forge needed).
  z = -scale .* log(rand(sz)) .* (2 * (rand(sz) < 0.5) - 1);
end
