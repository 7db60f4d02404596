function z = dphd_laplace(scale, sz)
  % Paper mode only: Laplace(0, scale) variates of size sz as the authors drew them, in
  % floating point from Octave's 53-bit uniforms: an exponential variate -scale*log(U) with a
  % random sign (no Octave Forge needed). Corrected mode draws no noise in Octave.
  z = -scale .* log(rand(sz)) .* (2 * (rand(sz) < 0.5) - 1);
end
