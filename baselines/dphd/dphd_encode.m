function bytes = dphd_encode(v)
  % One value in the Python <-> Octave wire format (described in protocol.py), as a uint8
  % row: numbers and logicals as double arrays, char rows as text (Octave holds text as UTF-8
  % bytes already), cells as lists, scalar structs as structs.
  if ischar(v)
    bytes = [uint8('c'), typecast(int64(numel(v)), 'uint8'), uint8(v(:).')];
  elseif isstruct(v)
    names = fieldnames(v);
    parts = cell(1, 2 * numel(names));
    for t = 1:numel(names)
      parts{2 * t - 1} = [typecast(int64(numel(names{t})), 'uint8'), uint8(names{t})];
      parts{2 * t} = dphd_encode(v.(names{t}));
    end
    bytes = [uint8('s'), typecast(int64(numel(names)), 'uint8'), parts{:}];
  elseif iscellstr(v) && ~isempty(v) && all(cellfun('size', v, 1) <= 1)
    % a list of texts (the ledger's fields: most of a result's values), laid out at once:
    % per text the tag, its length and its bytes, as the loop below writes them
    count = numel(v);
    lens = reshape(cellfun('prodofsize', v), 1, count);
    heads = [repmat(uint8('c'), 1, count); reshape(typecast(int64(lens), 'uint8'), 8, count)];
    at = cumsum([0, 9 + lens(1:end - 1)]) + (1:9).';   % where each text's head goes
    body = zeros(1, 9 * count + sum(lens), 'uint8');
    body(at(:)) = heads(:);
    rest = true(1, numel(body));
    rest(at(:)) = false;
    body(rest) = uint8([v{:}]);
    bytes = [uint8('l'), typecast(int64(count), 'uint8'), body];
  elseif iscell(v)
    % texts inside other values encoded here, not by a call each
    parts = cell(1, numel(v));
    for t = 1:numel(v)
      x = v{t};
      if ischar(x)
        parts{t} = [uint8('c'), typecast(int64(numel(x)), 'uint8'), uint8(x(:).')];
      else
        parts{t} = dphd_encode(x);
      end
    end
    bytes = [uint8('l'), typecast(int64(numel(v)), 'uint8'), parts{:}];
  elseif isnumeric(v) || islogical(v)
    x = full(double(v));
    bytes = [uint8('d'), typecast(int64([ndims(x), size(x)]), 'uint8'), ...
             typecast(x(:).', 'uint8')];
  else
    error('dphd:protocol', 'cannot send a value of class %s to Python', class(v));
  end
end
