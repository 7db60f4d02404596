function P = dphd_project(Xt, Z)
  % (Z * Xt).' (n x k): every point (column of Xt, d x n, sparse or dense) times the k rows of
  % Z (k x d). A dense Xt is multiplied as Xt.' * Z.', the same products and sums in the same
  % order, which BLAS runs about twice as fast for a few rows (no transpose is formed).
  if issparse(Xt)
    P = full(Z * Xt).';
  else
    P = Xt.' * Z.';
  end
end
