function outs = dphd_repeat(runs, which, fn, varargin)
  % Test helper: call fn(varargin{:}) `runs` times in one request and keep output number
  % `which` of every call (the neighbour tests run a mechanism thousands of times).
  outs = cell(1, runs);
  res = cell(1, which);
  for t = 1:runs
    [res{:}] = feval(fn, varargin{:});
    outs{t} = res{which};
  end
end
