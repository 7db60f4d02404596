function [C, side, nlev] = dphd_candidates(Y, eps_p, side, paper, ntrials, tag)
  % Candidate centres (candidate.m): one partition of Y and `ntrials` (2) partitions of Y
  % shifted by o ~ U[-s/2, s/2]^p, each shifted back; the centres are concatenated.
  % Every partition call gets eps_p (1 + ntrials calls in all). The authors' candidate.m is
  % handed 2 eps_r/3 and divides it by ntrials = 2, so it runs three calls of eps_r/3.
  % paper = true: `side` is the global side length, halved inside every call and never reset,
  %   and the shift uses its current value. paper = false: every call starts from the
  %   public side length passed in (reset per call). tag names the round in the ledger.
  p = columns(Y);
  s0 = side;
  [C, s1, nlev] = dphd_partition(Y, eps_p, side, paper, sprintf('%spartition 1 ', tag));
  if paper
    side = s1;
  end
  for t = 1:ntrials
    if paper
      s_now = side;
    else
      s_now = s0;
    end
    o = -s_now / 2 + s_now * rand(1, p);
    [Ct, s1, nl] = dphd_partition(Y + o, eps_p, s_now, paper, ...
                                  sprintf('%spartition %d ', tag, t + 1));
    if paper
      side = s1;
    end
    nlev = [nlev, nl];
    C = [C; Ct - o];
  end
  if ~paper
    side = s0;
  end
end
