"""How good is the privacy audit? Two measurements of :mod:`dptaucc.audit` from outside.

* :mod:`~dptaucc.auditscore.mutants` (``make audit-mutants``): mutants of the privacy-relevant
  code made automatically (:mod:`~dptaucc.auditscore.mutate`), each run against the audit alone
  and against the tests alone in a scratch copy of the tree; the share each kills.
* :mod:`~dptaucc.auditscore.false_alarms` (``make audit-false-alarms``): the gate's decision on
  correct code, many times with fresh audit seeds; the observed false-alarm rate against the
  nominal α.

Both drive the audit through its public entry points only (``python -m dptaucc.audit``,
:mod:`dptaucc.audit.primitives`, :func:`dptaucc.audit.experiment.run_all`) and the tests
through pytest, so they measure whatever audit the tree holds. docs/audit.md explains how.
"""
