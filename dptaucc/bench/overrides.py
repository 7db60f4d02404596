"""Refuse, in one line, a command-line override of a key that the config does not have.

Hydra stops such a command (``algorithm.params.n_iter=3`` for ``n_iterations``) with a
several-line error and exit 1, the code of a failed job. :func:`check_overrides` finds the
override first: it composes the config with the command line's group choices
(``algorithm=...``, ``dataset=...``, ``experiment=...``; each choice of a swept group) and
looks every overridden key up in it, so the engine exits 2 with one line naming the key, the
keys that exist there, the closest one, and ``+key=value`` for a key meant to be new.
"""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from dptaucc.bench.configs import Composer, config_dir

__all__ = ["UnknownKeyError", "check_overrides"]

#: at most this many group-choice combinations of a sweep are composed for the check
MAX_COMBINATIONS = 16
#: options that make Hydra print something instead of running (left to Hydra)
_INFO_FLAGS = ("-h", "--help", "--hydra-help", "-c", "--cfg", "-i", "--info", "--shell-completion",
               "-sc")


class UnknownKeyError(ValueError):
    """A command-line override names a key that the composed config does not have.

    >>> issubclass(UnknownKeyError, ValueError)  # a bad value: exit 2, like a bad choice
    True
    """


def _user_dirs(argv: Sequence[str]) -> list[str]:
    dirs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--config-dir", "-cd")]
    return dirs + [a.partition("=")[2] for a in argv if a.startswith("--config-dir=")]


def _groups(user_dirs: Iterable[str]) -> set[str]:
    """Names of the config groups (sub-folders of the packaged and the user's config dirs)."""
    dirs = [config_dir(), *map(Path, user_dirs)]
    env = os.environ.get("DPTAUCC_CONFIG_PATH")
    if env and not env.startswith("pkg://"):
        dirs.append(Path(env.removeprefix("file://")))
    return {p.name for d in dirs if d.is_dir() for p in d.iterdir() if p.is_dir()}


def check_overrides(argv: Sequence[str]) -> None:
    """Raise :class:`UnknownKeyError` for an override ``key=value`` (no ``+``) whose key the
    composed config lacks. Hydra's own keys (``hydra.*``), additions (``+``, ``++``) and
    deletions (``~``) are left alone, and so is a command line that asks Hydra for help or
    for the config (``--help``, ``--cfg``). Nothing is composed when every overridden key is a
    top-level key of ``config.yaml`` (``epsilon=0.5 seed=0``).

    >>> check_overrides(["algorithm=dp_taucc", "epsilon=0.5", "algorithm.params.h=0.2"])
    >>> check_overrides(["algorithm=dp_taucc", "algorithm.params.n_iter=3"])
    Traceback (most recent call last):
    ...
    dptaucc.bench.overrides.UnknownKeyError: algorithm.params.n_iter=3: algorithm 'dp_taucc' ...
    """
    argv = list(argv)
    if any(a.partition("=")[0] in _INFO_FLAGS for a in argv):
        return
    from hydra.core.override_parser.overrides_parser import OverridesParser

    texts = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(texts)
    except Exception:  # noqa: BLE001 - Hydra reports its own syntax errors
        return
    dirs = _user_dirs(argv)
    groups = _groups(dirs)
    top = set(OmegaConf.load(config_dir() / "config.yaml"))
    choices, kept, keys = {}, [], []
    for text, o in zip(texts, parsed, strict=True):
        key = o.get_key_element()
        if key.startswith("hydra") or "@" in key:
            continue
        if o.key_or_group in groups and not o.is_add() and not o.is_delete():
            values = list(o.sweep_iterator()) if o.is_sweep_override() else [o.value()]
            choices[o.key_or_group] = [str(v) for v in values]
        elif o.is_add() or o.is_force_add() or o.is_delete():
            value = next(iter(o.sweep_iterator())) if o.is_sweep_override() else o.value()
            if not o.is_delete():
                kept.append(f"{'++' if o.is_force_add() else '+'}{key}={value}")
        elif key not in top:
            keys.append((key, text))
    if not keys:
        return
    search = [f"hydra.searchpath=[{','.join('file://' + str(Path(d).resolve()) for d in dirs)}]"
              ] if dirs else []
    combos = list(itertools.islice(itertools.product(*(
        [(g, v) for v in vs] for g, vs in choices.items())), MAX_COMBINATIONS))
    with Composer() as composer:
        for combo in combos:
            try:
                cfg = composer.compose([*search, *(f"{g}={v}" for g, v in combo), *kept])
            except Exception:  # noqa: BLE001 - a composition error is Hydra's to report
                return
            for key, text in keys:
                _check_key(cfg, key, text, dict(combo))


def _check_key(cfg: DictConfig, key: str, text: str, combo: dict[str, str]) -> None:
    """Raise :class:`UnknownKeyError` when ``key`` (dotted) is not in ``cfg``."""
    parts = key.split(".")
    node = cfg
    for depth, part in enumerate(parts):
        if not isinstance(node, DictConfig) or part not in node.keys():
            where = ".".join(parts[:depth])
            have = sorted(str(k) for k in node.keys()) if isinstance(node, DictConfig) else []
            raise UnknownKeyError(_message(cfg, text, where, part, have, combo))
        node = node._get_node(part)
        node = node if isinstance(node, DictConfig) else node._value()


def _message(cfg: DictConfig, text: str, where: str, part: str, have: list[str],
             combo: dict[str, str]) -> str:
    """One line: what is missing where, the closest key, the keys there, ``+`` to add it."""
    group = where.split(".")[0] if where else ""
    if group in ("algorithm", "dataset") and where.endswith(".params"):
        owner = f"{group} {cfg[group].get('name', combo.get(group))!r} has no parameter {part!r}"
    elif where:
        owner = f"the config has no key {part!r} under {where}"
    else:
        owner = f"the config has no top-level key {part!r}"
    close = difflib.get_close_matches(part, have, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    listed = f"; keys there: {', '.join(have)}" if have else ""
    return f"{text}: {owner}{hint}{listed}; to add a new key, write +{text}"
