function dphd_main(req_path, resp_path)
  % The persistent Octave process behind the Python wrapper (octave.py). It serves requests
  % read from the named pipe req_path and answers on resp_path (wire format: protocol.py;
  % each answer is preceded by its byte length)
  % until Python sends 'quit' or closes the request pipe (e.g. because it exited).
  %
  % Requests (structs with a field cmd):
  %   put  key, Xt [, integral]  keep the d x n matrix Xt (sparse or dense, one point per
  %                   COLUMN; integral: are its entries whole numbers) under key (dphd_data.m);
  %                   each matrix comes once
  %   drop key        forget it
  %   fit  key, params  seed rand/randn, run dphd_fit on the kept matrix
  %   call fn, args, nargout  run any function (the tests use it on single steps)
  %   quit
  % Answers: struct op = 'ready' | 'ok' | 'done' (with result) | 'error' (message, stack).
  % While a corrected-mode fit runs, its mechanisms send their own requests to Python and
  % wait for the noisy release (dphd_mechanism.m).
  crash_dumps_octave_core(false);
  fo = fopen(resp_path, 'w');    % Python already holds the read end: does not block
  fi = fopen(req_path, 'r');     % blocks until Python opens the write end
  if fo < 0 || fi < 0
    exit(3);
  end
  global DPHD_CHANNEL
  DPHD_CHANNEL = struct('in', fi, 'out', fo);
  cache = containers.Map();
  answer(fo, struct('op', 'ready', 'protocol', 1));
  while true
    try
      msg = dphd_read(fi);
    catch
      % Python closed the channel (it exited, or was killed): clean up after it and stop
      fclose(fi);
      fclose(fo);
      confirm_recursive_rmdir(false);
      rmdir(fileparts(req_path), 's');
      return;
    end
    try
      switch msg.cmd
        case 'put'
          if isfield(msg, 'integral')
            cache(msg.key) = dphd_data(msg.Xt, msg.integral);
          else
            cache(msg.key) = dphd_data(msg.Xt);
          end
          answer(fo, struct('op', 'ok'));
        case 'drop'
          if isKey(cache, msg.key)
            remove(cache, msg.key);
          end
          answer(fo, struct('op', 'ok'));
        case 'fit'
          D = cache(msg.key);
          P = msg.params;
          rand('state', P.seed_rand);
          randn('state', P.seed_randn);
          W = [];
          if isfield(P, 'budget_weights')
            W = P.budget_weights;
          end
          R = dphd_fit(D, P.k, P.epsilon, P.n_rounds, P.max_value, P.row_l1_bound, ...
                       P.paper, P.trace, W);
          answer(fo, struct('op', 'done', 'result', R));
        case 'call'
          out = cell(1, msg.nargout);
          if msg.nargout > 0
            [out{:}] = feval(msg.fn, msg.args{:});
          else
            feval(msg.fn, msg.args{:});
          end
          answer(fo, struct('op', 'done', 'result', {out}));
        case 'quit'
          answer(fo, struct('op', 'ok'));
          break;
        otherwise
          error('dphd:protocol', 'unknown request %s', msg.cmd);
      end
    catch err
      where = '';
      for s = err.stack.'
        where = [where, sprintf('\n  at %s line %d', s.name, s.line)];
      end
      answer(fo, struct('op', 'error', 'message', err.message, 'identifier', err.identifier, ...
                        'stack', where));
    end
  end
  fclose(fi);
  fclose(fo);
end

function answer(fo, value)
  dphd_send(fo, value);
end
