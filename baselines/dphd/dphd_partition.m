function [C, side, nlevels] = dphd_partition(Y, eps_p, side, paper, tag)
  % Private partition of the projected points Y (n x p, one point per row) by a regular grid
  % (Balcan et al. 2017, Alg. 2 "candidate" / partition.m), vectorised.
  %
  % Level by level: the side length is halved, the centres of the current cells are output, the
  % points of each cell are bucketed by the sign pattern of (y - centre) in {-1,0,1}^p, and a
  % bucket survives as a child cell, centred at centre + side/2 * pattern, if its noisy count
  % passes a threshold. Returns the output centres C (rows), the side length after the call
  % and the number of levels run.
  %
  % paper = true: as the authors ran it. eps_s = eps_p/(2 ln n), gamma = 2 ln n/eps_s; only the
  %   NON-EMPTY buckets are tested, each kept with probability 1 - e^{-eps_s(a-gamma)}/2 if
  %   a > gamma else e^{eps_s(a-gamma)}/2 (= the test a + Lap(1/eps_s) > gamma); children
  %   are ordered as containers.Map orders the num2str keys (per coordinate 0 < 1 < -1, first
  %   coordinate most significant). The caller keeps `side` across calls (global side_length).
  % paper = false (corrected): every one of the 3^p buckets of every cell gets a noisy count,
  %   empty ones included (testing only non-empty buckets leaks their emptiness: an empty
  %   bucket can never be output, so the test is not epsilon-DP). Replacing one row moves one
  %   point between two buckets, so the bucket counts of a level have L1 sensitivity 2; each
  %   of the L = ceil(ln n) - 1 levels is a discrete Laplace release at eps_p/L (scale
  %   2L/eps_p), drawn and charged in Python; levels not run because no cell survived are
  %   charged all the same (where the partition stops is part of what it releases), so a
  %   call costs exactly eps_p. Threshold gamma = 2 ln(n) b, the paper's choice in units of
  %   the scale b.
  n = rows(Y);
  p = columns(Y);
  lnn = log(n);
  nb = 3 ^ p;
  pw = 3 .^ (p - 1:-1:0).';
  if paper
    eps_s = eps_p / (2 * lnn);
    gamma = 2 * lnn / eps_s;
  else
    L = max(1, ceil(lnn) - 1);
    eps_level = eps_p / L;
    b = 2 / eps_level;
    gamma = 2 * lnn * b;
  end
  cells = zeros(1, p);
  member = ones(n, 1);          % index of each point's cell, 0 once its bucket died
  C = zeros(0, p);
  depth = 1;
  nlevels = 0;
  while depth < lnn && ~isempty(cells)
    side = side / 2;
    C = [C; cells];
    nlevels = nlevels + 1;
    act = find(member > 0);
    S = sign(Y(act, :) - cells(member(act), :));
    R = S;
    R(S == -1) = 2;             % key order 0 < 1 < -1 per coordinate
    bucket = (member(act) - 1) * nb + R * pw;   % 0-based (cell, pattern) id
    ncand = rows(cells) * nb;
    if paper
      % the non-empty buckets in increasing id order and their counts (as unique and
      % accumarray give them, from one count per possible id)
      counts = accumarray(bucket + 1, 1, [ncand, 1]);
      ub = find(counts) - 1;
      a = counts(ub + 1);
      prob = 0.5 * exp(eps_s * (a - gamma));
      hi = a > gamma;
      prob(hi) = 1 - 0.5 * exp(-eps_s * (a(hi) - gamma));
      keep = rand(numel(ub), 1) < prob;
    else
      ub = (0:ncand - 1).';
      a = accumarray(bucket + 1, 1, [ncand, 1]);
      noisy = dphd_mechanism('discrete-laplace', sprintf('%slevel %d', tag, nlevels), ...
                             eps_level, 2, sprintf(['bucket counts of %d cells x 3^%d ' ...
                             'patterns, count sensitivity 2'], rows(cells), p), a);
      keep = noisy > gamma;
    end
    kept = ub(keep);
    kept = kept(:);
    parent = floor(kept / nb) + 1;
    code = mod(kept, nb);
    pattern = zeros(numel(kept), p);
    for t = 1:p
      digit = floor(code / pw(t));
      code = code - digit * pw(t);
      pattern(:, t) = digit;
    end
    pattern(pattern == 2) = -1;
    cells = cells(parent, :) + (side / 2) * pattern;
    child = zeros(ncand, 1);    % child cell of each bucket id (0: none), as ismember's index
    child(kept + 1) = 1:numel(kept);
    loc = child(bucket + 1);
    member(:) = 0;
    member(act) = loc;
    depth = depth + 1;
  end
  if ~paper && nlevels < L
    dphd_mechanism('charge', sprintf('%slevels %d-%d', tag, nlevels + 1, L), ...
                   (L - nlevels) * eps_level, 2, ['not run: no cell left; charged, since ' ...
                   'the level where the partition stops is part of its output'], []);
  end
end
