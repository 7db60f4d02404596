function dphd_send(fid, value)
  % Send one message to Python: its byte length (int64), then the encoded value.
  bytes = dphd_encode(value);
  fwrite(fid, [typecast(int64(numel(bytes)), 'uint8'), bytes], 'uint8');
  fflush(fid);
end
