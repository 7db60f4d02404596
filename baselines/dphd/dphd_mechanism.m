function out = dphd_mechanism(op, step, epsilon, sensitivity, note, values)
  % Corrected mode: one mechanism call, served by Python from the fit's sampler and charged
  % there to the fit's ledger before any noise is drawn (octave.py, mechanisms.py).
  %   'discrete-laplace'  values: integers of any shape whose L1 distance between neighbours
  %                       is at most `sensitivity`; returns values + discrete Laplace noise of
  %                       scale sensitivity/epsilon (integers).
  %   'exponential'       values: one row of utilities whose range sensitivity (the most the
  %                       difference of two utilities moves between neighbours) is at most
  %                       `sensitivity`; returns the 1-based index drawn with probability
  %                       proportional to exp(epsilon * u / sensitivity).
  %   'charge'            no values: records epsilon for a share of budget that was set aside
  %                       but not drawn (returns []).
  % The request is the struct {op, step, epsilon, sensitivity, note, values} of protocol.py
  % with its byte length in front, assembled here with built-ins only (a fit makes dozens of
  % calls: this path is kept fast); the answer is the release itself (an int64 array), or a
  % text if Python stops the fit.
  global DPHD_CHANNEL
  persistent head
  if isempty(DPHD_CHANNEL)
    error('dphd:channel', ['corrected-mode DPHD draws its noise in Python: run it through ' ...
                           'the Python wrapper (dptaucc.baselines.dphd)']);
  end
  if isempty(head)
    name = @(s) [typecast(int64(numel(s)), 'uint8'), uint8(s)];
    scalar = [uint8('d'), typecast(int64([2, 1, 1]), 'uint8')];
    head = {[uint8('s'), typecast(int64(6), 'uint8'), name('op'), uint8('c')], ...
            [name('step'), uint8('c')], [name('epsilon'), scalar], ...
            [name('sensitivity'), scalar], [name('note'), uint8('c')], ...
            [name('values'), uint8('d')]};
  end
  values = double(values);
  fid = DPHD_CHANNEL.out;
  bytes = [head{1}, typecast(int64(numel(op)), 'uint8'), uint8(op), ...
           head{2}, typecast(int64(numel(step)), 'uint8'), uint8(step), ...
           head{3}, typecast(double(epsilon), 'uint8'), ...
           head{4}, typecast(double(sensitivity), 'uint8'), ...
           head{5}, typecast(int64(numel(note)), 'uint8'), uint8(note), ...
           head{6}, typecast(int64([ndims(values), size(values)]), 'uint8')];
  fwrite(fid, [typecast(int64(numel(bytes) + 8 * numel(values)), 'uint8'), bytes], 'uint8');
  fwrite(fid, values, 'double');
  fflush(fid);
  fi = DPHD_CHANNEL.in;
  tag = fread(fi, 1, 'uint8=>char');
  if tag == 'i'
    nd = fread(fi, 1, 'int64=>double');
    dims = fread(fi, nd, 'int64=>double').';
    out = reshape(fread(fi, prod(dims), 'int64=>double'), dims);
  elseif tag == 'c'
    msg = char(fread(fi, fread(fi, 1, 'int64=>double'), 'uint8=>char').');
    error('dphd:abort', 'Python stopped the fit: %s', msg);
  else
    error('dphd:protocol', 'unexpected answer tag %d to a mechanism call', double(tag));
  end
end
