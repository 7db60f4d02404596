function v = dphd_read(fid)
  % One value of the Python <-> Octave wire format (described in protocol.py) from fid.
  % Errors with identifier 'dphd:eof' when the channel is closed (Python went away).
  tag = fread(fid, 1, 'uint8=>char');
  if isempty(tag)
    error('dphd:eof', 'the request channel was closed');
  end
  switch tag
    case {'d', 'i'}
      nd = fread(fid, 1, 'int64=>double');
      dims = fread(fid, nd, 'int64=>double').';
      if tag == 'd'
        v = fread(fid, prod(dims), 'double=>double');
      else
        v = fread(fid, prod(dims), 'int64=>double');
      end
      v = reshape(v, dims);
    case 'c'
      v = read_text(fid);
    case 'l'
      count = fread(fid, 1, 'int64=>double');
      v = cell(1, count);
      for t = 1:count
        v{t} = dphd_read(fid);
      end
    case 's'
      count = fread(fid, 1, 'int64=>double');
      v = struct();
      for t = 1:count
        name = read_text(fid);
        v.(name) = dphd_read(fid);
      end
    case 'p'
      hdr = fread(fid, 3, 'int64=>double');
      colptr = fread(fid, hdr(2) + 1, 'int64=>double');
      rowind = fread(fid, hdr(3), 'int64=>double');
      vals = fread(fid, hdr(3), 'double=>double');
      cols = repelem((1:hdr(2)).', diff(colptr));
      v = sparse(rowind + 1, cols, vals, hdr(1), hdr(2));
    otherwise
      error('dphd:protocol', 'unknown value tag %d from Python (channel out of step)', ...
            double(tag));
  end
end

function s = read_text(fid)
  n = fread(fid, 1, 'int64=>double');
  s = char(fread(fid, n, 'uint8=>char').');
  if isempty(s)
    s = '';
  end
end
