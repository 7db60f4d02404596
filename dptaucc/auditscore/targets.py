"""What the mutation run mutates, and which audit and which tests judge each mutant.

A *group* is code released by one method (or the privacy primitives): its files (with the
functions that release, compute a release's input or post-process it), the audit commands that
run it, and the test paths whose tests may cover it. Evaluation-only methods (``predict``,
``evaluation_*``, ``score``, ``transform``, and every function whose docstring starts with
``NOT PRIVATE``) read the private data by design and are not mutated; neither are the
audit's own instruments (:mod:`dptaucc.privacy.hook`,
:mod:`dptaucc.privacy.checks`) or DPHD's Octave code (only its Python mechanism server).

Audit commands run with the working directory at the scratch tree's root; ``{out}`` is a
scratch results folder. A method's audit is ``python -m dptaucc.audit --size quick --methods
NAME --jobs 1`` (exit 3 on a violation); the primitives' is ``python -m dptaucc.audit.primitives``
at its default size, on the seeded samplers and (``exact.py``, ``SecureSampler``) the secure ones.

>>> [g.name for g in GROUPS]
['privacy', 'dp_taucc', 'dp_taucc_row', 'dp_kmeans', 'colored_noise', 'dpnmf', 'dpm', 'dphd']
>>> group_of("baselines/dpm/tree.py").name, group_of("README.md")
('dpm', None)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Group", "GROUPS", "AUDITS", "group_of", "is_release_function", "NOT_RELEASE",
           "PRIVACY_METHOD_AUDITS"]

#: methods that read the private data by design (documented as not private): not mutated
NOT_RELEASE = ("predict", "fit_predict", "score", "transform", "evaluation_", "_evaluation_",
               "__init__", "__repr__", "__sklearn_tags__", "release_kinds", "_check_parameters")

#: audit name -> command (argv after the interpreter); run from the scratch tree's root
AUDITS: dict[str, tuple[str, ...]] = {
    "primitives": ("-m", "dptaucc.audit.primitives"),
    "primitives-secure": ("-m", "dptaucc.audit.primitives", "--secure"),
    **{f"method:{m}": ("-m", "dptaucc.audit", "--size", "quick", "--methods", m, "--jobs", "1",
                       "--no-progress", "--results-dir", "{out}")
       for m in ("dp_taucc", "dp_taucc_row", "dp_kmeans", "colored_noise", "dpnmf", "dpm",
                 "dphd")},
}


#: the quick method gates also run on mutants of the privacy primitives: the gate a user runs
#: (``python -m dptaucc.audit --size quick``) draws the primitives through the methods too
#: (the call sites' batched redraws, the methods' own arguments), paths the primitives audit
#: never takes; these three take seconds to minutes, the others longer
PRIVACY_METHOD_AUDITS = ("method:dp_taucc", "method:dp_taucc_row", "method:colored_noise")


@dataclass(frozen=True)
class Group:
    """Files of one method's release code, the audits that run them and the tests to map."""

    name: str
    #: repository path -> functions mutated there (qualified names or class prefixes; None: all)
    files: dict[str, tuple[str, ...] | None]
    audits: tuple[str, ...]
    tests: tuple[str, ...]


_DOCTESTS = "tests/packaging/test_doctests.py"

GROUPS: tuple[Group, ...] = (
    Group("privacy", {
        "dptaucc/privacy/mechanisms.py": None,
        "dptaucc/privacy/bounded.py": None,
        "dptaucc/privacy/samplers.py": None,
        "dptaucc/privacy/exact.py": None,
        "dptaucc/privacy/ledger.py": None,
        "dptaucc/privacy/wide_choice.py": None,
        "dptaucc/kernels.py": ("exponential_from_uniforms", "choose_by_inversion",
                               "_choose_native", "_choose_block", "_invert_sorted_by_argsort",
                               "_invert_sorted_by_network", "_sorted_rows", "_choose_row"),
    }, ("primitives", "primitives-secure", *PRIVACY_METHOD_AUDITS),
        ("tests/privacy", "tests/dptaucc/test_wide_choice.py",
         "tests/dptaucc/test_kernels_exact.py", _DOCTESTS)),
    Group("dp_taucc", {"dptaucc/dp_taucc.py": None}, ("method:dp_taucc",),
          ("tests/dptaucc", _DOCTESTS)),
    Group("dp_taucc_row", {"dptaucc/dp_taucc_row.py": None}, ("method:dp_taucc_row",),
          ("tests/dptaucc/test_taucc_row_privacy.py", "tests/audit/test_taucc_row_audit.py",
           "tests/dptaucc/test_taucc_sklearn.py", _DOCTESTS)),
    Group("dp_kmeans", {"baselines/dp_kmeans.py": None, "baselines/dp_sampling.py": None},
          ("method:dp_kmeans",),
          ("tests/baselines/test_dp_kmeans.py", "tests/baselines/test_dp_sampling.py",
           _DOCTESTS)),
    Group("colored_noise", {"baselines/colored_noise/estimator.py": None},
          ("method:colored_noise",), ("tests/baselines/test_colored_noise.py", _DOCTESTS)),
    Group("dpnmf", {"baselines/nmf_dp/release.py": None, "baselines/nmf_dp/gaussian.py": None,
                    "baselines/nmf_dp/model.py": None},
          ("method:dpnmf",),
          ("tests/baselines/test_nmf_dp.py", "tests/baselines/test_nmf_dp_privacy.py",
           _DOCTESTS)),
    Group("dpm", {f"baselines/dpm/{f}.py": None
                  for f in ("core", "tree", "interval", "gaussian", "neighbours", "rows",
                            "estimator")},
          ("method:dpm",), ("tests/baselines/test_dpm.py", _DOCTESTS)),
    Group("dphd", {"baselines/dphd/mechanisms.py": None}, ("method:dphd",),
          ("tests/baselines/test_dphd.py", "tests/baselines/test_dphd_privacy.py",
           "tests/baselines/test_dphd_octave.py", _DOCTESTS)),
)


def group_of(path: str) -> Group | None:
    """The group that mutates ``path`` (repository-relative), or None.

    >>> group_of("dptaucc/privacy/ledger.py").audits[:2]
    ('primitives', 'primitives-secure')
    >>> group_of("baselines/dp_sampling.py").name, group_of("dptaucc/privacy/hook.py")
    ('dp_kmeans', None)
    """
    return next((g for g in GROUPS if path in g.files), None)


def is_release_function(function: str) -> bool:
    """Whether a qualified function name is mutated (not an evaluation-only method).

    >>> is_release_function("DPKMeans.fit"), is_release_function("DPKMeans.evaluation_row_labels")
    (True, False)
    """
    return not any(part == n or (n.endswith("_") and part.startswith(n))
                   for part in function.split(".") for n in NOT_RELEASE)
