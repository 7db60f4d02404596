function s = dphd_counts_text(x)
  % num2str(x) of a row of whole numbers >= 0 (the levels each partition ran, for the
  % ledger's note), without num2str's general checks and splitting: each number right-aligned
  % in floor(log10(max(x))) + 3 characters (3 if every number is 0), the blanks around the
  % whole trimmed.
  width = 3;
  if any(x > 0)
    width = floor(log10(max(x))) + 3;
  end
  s = strtrim(sprintf(sprintf('%%%d.0f', width), x));
end
