function L = dphd_log(L, step, mechanism, epsilon, sensitivity, composition, note)
  % Append one privacy-ledger entry; the Python wrapper replays these into PrivacyLedger.
  L.step{end + 1} = step;
  L.mechanism{end + 1} = mechanism;
  L.epsilon(end + 1) = epsilon;
  L.sensitivity(end + 1) = sensitivity;
  L.composition{end + 1} = composition;
  L.note{end + 1} = note;
end
