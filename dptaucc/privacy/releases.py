"""What a fitted estimator holds: every public fitted attribute declares its kind.

Kinds:

* ``"dp"`` — the output of a mechanism charged to the fit's ledger;
* ``"post-processing"`` — computed from DP outputs and public facts only (no private data);
* ``"public"`` — a public fact: parameters, shapes, the ledger's bookkeeping;
* ``"non-private"`` — read from the private data outside any mechanism. Allowed only where
  the fit is declared not end-to-end DP (paper mode, non-private methods); the ledger then
  names the step and reports ``epsilon_spent_ = inf``.

An estimator declares its attributes in one place with :class:`ReleaseKindsMixin` (class
attributes ``_release_kinds`` for corrected mode and ``_paper_release_kinds`` for what paper
mode adds or changes). Anything that reads the private data after the mechanisms — labels of
the training rows, losses, per-document factors — belongs in a method the user calls on data
they hold (``predict``, ``transform``, ``evaluation_*``), documented as not private.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

__all__ = ["DP", "POST_PROCESSING", "PUBLIC", "NON_PRIVATE", "KINDS", "LEDGER_ATTRIBUTES",
           "ReleaseKindsMixin",
           "fitted_attributes", "undeclared_attributes", "attributes_of_kind"]

DP = "dp"
POST_PROCESSING = "post-processing"
PUBLIC = "public"
NON_PRIVATE = "non-private"
KINDS = (DP, POST_PROCESSING, PUBLIC, NON_PRIVATE)

#: bookkeeping every ledger-keeping estimator exposes (derived from the ledger, which holds
#: budgets, sensitivities of released quantities and noise scales)
LEDGER_ATTRIBUTES: Mapping[str, str] = {
    "privacy_ledger_": POST_PROCESSING,
    "epsilon_spent_": POST_PROCESSING,
    "delta_spent_": POST_PROCESSING,
}


class ReleaseKindsMixin:
    """Declares the kind of every public fitted attribute (see the module docstring).

    >>> class Toy(ReleaseKindsMixin):
    ...     _release_kinds = {"centers_": DP, "n_clusters_": PUBLIC}
    >>> toy = Toy()
    >>> toy.centers_, toy.n_clusters_, toy.labels_ = [0.5], 1, [0, 0]
    >>> toy.release_kinds()["centers_"], attributes_of_kind(toy, DP)
    ('dp', ['centers_'])
    >>> undeclared_attributes(toy)  # labels_ read the data: a test fails on it
    ['labels_']
    """

    _release_kinds: ClassVar[Mapping[str, str]] = {}
    _paper_release_kinds: ClassVar[Mapping[str, str]] = {}

    def release_kinds(self) -> dict[str, str]:
        """``{attribute: kind}`` for this estimator's mode."""
        kinds = dict(self._release_kinds)
        if getattr(self, "mode", None) == "paper":
            kinds.update(self._paper_release_kinds)
        bad = {k: v for k, v in kinds.items() if v not in KINDS}
        if bad:
            raise ValueError(f"unknown release kinds {bad}; expected one of {KINDS}")
        return kinds


def fitted_attributes(estimator) -> list[str]:
    """Public fitted attributes: names ending in ``_`` that do not start with ``_``.

    >>> from types import SimpleNamespace
    >>> fitted_attributes(SimpleNamespace(epsilon=1.0, labels_=[0], _cache_=None))
    ['labels_']
    """
    return sorted(a for a in vars(estimator) if a.endswith("_") and not a.startswith("_"))


def undeclared_attributes(estimator) -> list[str]:
    """Fitted attributes the estimator does not declare.

    >>> class Toy(ReleaseKindsMixin):
    ...     _release_kinds = {"centers_": DP}
    >>> toy = Toy()
    >>> toy.centers_, toy.labels_ = [0.5], [0, 1]
    >>> undeclared_attributes(toy)
    ['labels_']
    """
    kinds = estimator.release_kinds() if hasattr(estimator, "release_kinds") else {}
    return [a for a in fitted_attributes(estimator) if a not in kinds]


def attributes_of_kind(estimator, kind: str) -> list[str]:
    """Fitted attributes declared as ``kind``.

    >>> class Toy(ReleaseKindsMixin):
    ...     _release_kinds = {"centers_": DP, "scale_": PUBLIC, "labels_": POST_PROCESSING}
    >>> toy = Toy()
    >>> toy.centers_, toy.scale_, toy.labels_ = [0.5], 2.0, [0, 1]
    >>> attributes_of_kind(toy, DP), attributes_of_kind(toy, PUBLIC)
    (['centers_'], ['scale_'])
    """
    kinds = estimator.release_kinds()
    return [a for a in fitted_attributes(estimator) if kinds.get(a) == kind]
