"""Which scenarios the audit runs for a method: found beside the method, never listed here.

A method is named by its algorithm config (``conf/algorithm/<name>.yaml``, packaged or in
``$DPTAUCC_CONFIG_PATH``). Its :class:`~dptaucc.methods.MethodInfo` — a built-in method's from
:mod:`dptaucc.methods`, your own from ``METHOD`` in the module of the config's ``_target_`` —
names its audit module (``audit=``); that module's ``scenarios()`` returns the method's
:class:`~dptaucc.audit.scenarios.AuditScenarios` (pairs, events, call-site setups, bugs). A
method without one gets :func:`~dptaucc.audit.scenarios.default_scenarios` (private) or
:func:`~dptaucc.audit.scenarios.exact_scenarios` (non-private).

>>> [s.pair.name for s in method_audits("dp_taucc")][:2]  # the main scenario first
['all_zero_row', 'all_zero_matrix']
>>> len(method_audits("fast_taucc"))  # a non-private method: its main scenario only
1
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from .scenarios import (
    AuditScenarios,
    CallSiteSetup,
    Scenario,
    default_scenarios,
    exact_scenarios,
    resolve,
    zero_matrix_scenario,
)

__all__ = ["algorithm_config", "config_dirs", "method_info", "scenarios_of", "method_audit",
           "method_audits", "call_site_setup", "is_private", "builtin_methods"]


def config_dirs() -> list[Path]:
    """The packaged config directory, then ``$DPTAUCC_CONFIG_PATH`` (a user's own configs).

    >>> import os
    >>> from unittest import mock
    >>> (config_dirs()[0] / "algorithm" / "dp_taucc.yaml").is_file()
    True
    >>> with mock.patch.dict(os.environ, {"DPTAUCC_CONFIG_PATH": "file:///srv/my_configs"}):
    ...     [d.as_posix() for d in config_dirs()[1:]]
    ['/srv/my_configs']
    """
    dirs = [Path(str(resources.files("dptaucc.conf")))]
    env = os.environ.get("DPTAUCC_CONFIG_PATH")
    if env and not env.startswith("pkg://"):
        dirs.append(Path(env.removeprefix("file://")))
    return dirs


def algorithm_config(name: str) -> dict:
    """The algorithm config ``name`` (packaged first, then ``$DPTAUCC_CONFIG_PATH``).

    >>> algorithm_config("dp_taucc")["_target_"]
    'dptaucc.DPTauCC'
    >>> algorithm_config("nope")
    Traceback (most recent call last):
    ...
    ValueError: no algorithm config 'nope' (conf/algorithm/nope.yaml, packaged or in ...
    """
    for d in config_dirs():
        path = d / "algorithm" / f"{name}.yaml"
        if path.exists():
            return yaml.safe_load(path.read_text(encoding="utf-8"))
    raise ValueError(f"no algorithm config {name!r} (conf/algorithm/{name}.yaml, packaged or in "
                     "$DPTAUCC_CONFIG_PATH)")


def is_private(name: str) -> bool:
    """Whether the algorithm config ``name`` is a private method (its ``private:`` key,
    true unless it says otherwise).

    >>> is_private("dp_taucc"), is_private("fast_taucc")
    (True, False)
    """
    return bool(algorithm_config(name).get("private", True))


def builtin_methods() -> tuple[str, ...]:
    """The built-in methods' config names, in display order.

    >>> builtin_methods()[:3], "dpm" in builtin_methods()
    (('dp_taucc', 'dp_taucc_row', 'fast_taucc'), True)
    """
    from dptaucc.methods import BUILTIN_MODULES

    return tuple(BUILTIN_MODULES)


def method_info(name: str):
    """The :class:`~dptaucc.methods.MethodInfo` of a method, or None for a user's method whose
    estimator module declares no ``METHOD``.

    >>> info = method_info("dp_taucc")
    >>> info.estimator, info.audit
    ('dptaucc.DPTauCC', 'dptaucc.dp_taucc_audit')
    """
    from dptaucc.methods import BUILTIN_MODULES, MethodInfo, method

    if name in BUILTIN_MODULES:
        return method(name)
    target = str(algorithm_config(name).get("_target_", ""))
    module = target.rpartition(".")[0]
    if not module:
        return None
    info = getattr(importlib.import_module(module), "METHOD", None)
    return info if isinstance(info, MethodInfo) else None


@cache
def scenarios_of(name: str) -> AuditScenarios:
    """The audit scenarios a method declares (module docstring).

    >>> s = scenarios_of("dp_kmeans")
    >>> s.main.pair.name, len(s.call_sites) > 0, all(b.method == "dp_kmeans" for b in s.bugs)
    ('new_column_maximum', True, True)
    """
    info = method_info(name)
    path = getattr(info, "audit", None)
    if path:
        found = resolve(path)
        out = found() if callable(found) else found
        if not isinstance(out, AuditScenarios):
            raise TypeError(f"{path} gave {type(out).__name__}, not AuditScenarios")
    else:
        out = default_scenarios() if is_private(name) else exact_scenarios()
    for bug in out.bugs:
        if bug.method != name or not bug.name.startswith(f"{name}."):
            raise ValueError(f"bug {bug.name!r} of {name!r} must be named '{name}.<bug>' and "
                             f"have method={name!r}")
    return out


def method_audit(method: str) -> Scenario:
    """The main scenario of an algorithm config name.

    >>> method_audit("kmeans")
    Traceback (most recent call last):
    ...
    ValueError: no algorithm config 'kmeans' (conf/algorithm/kmeans.yaml, packaged or in ...
    """
    return scenarios_of(method).main


def method_audits(method: str) -> tuple[Scenario, ...]:
    """Every end-to-end scenario of a method: its declared ones (the main one first) then,
    for a private method, the all-zero matrix (unless declared).

    >>> [s.pair.name for s in scenarios_of("dp_kmeans").end_to_end]
    ['new_column_maximum', 'row_at_bound', 'replaced_row', 'row_leaves_the_top', 'zero_row_added']
    >>> [s.pair.name for s in method_audits("dp_kmeans")][-2:]  # the all-zero matrix added
    ['zero_row_added', 'all_zero_matrix']
    >>> [s.pair.name for s in method_audits("fast_taucc")]  # non-private: nothing added
    ['moving_row']
    """
    s = scenarios_of(method)
    if not is_private(method):
        return s.end_to_end
    has_zero = any(m.pair.name == "all_zero_matrix" for m in s.end_to_end)
    return (*s.end_to_end, *(() if has_zero or not s.zero_matrix else (zero_matrix_scenario(),)))


def call_site_setup(method: str) -> tuple[CallSiteSetup, ...]:
    """The call-site setups of a method (none for non-private methods).

    >>> [s.pair.name for s in call_site_setup("dp_taucc")][:3], call_site_setup("fast_taucc")
    (['all_zero_row', 'all_zero_column', 'one_per_row_but_the_first'], ())
    """
    return scenarios_of(method).call_sites if is_private(method) else ()
