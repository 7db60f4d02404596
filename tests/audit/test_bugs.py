"""The bug catalogue plants what it says: each bug changes what its method releases (same
seed, same data), and leaving :meth:`Bug.applied` restores the correct code."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.colored_noise import ColoredNoiseKMeans
from dptaucc.baselines.dp_kmeans import DPKMeans
from dptaucc.baselines.dphd.testing import have_octave
from dptaucc.baselines.dpm import DPM
from dptaucc.baselines.nmf_dp import DPNMF

from dptaucc import DPTauCC, DPTauCCRow
from dptaucc.audit.catalogue import CATALOGUE, bugs_of
from dptaucc.privacy import fitted_attributes


def _blocks(seed: int = 0) -> sp.csr_matrix:
    """Three row groups x three column groups with empty off-diagonal blocks, counts up to ~20."""
    rng = np.random.default_rng(seed)
    return sp.csr_matrix(rng.poisson(np.kron(np.eye(3), np.ones((10, 6))) * 8))


#: per method, settings under which its bugs show (a bug must change at least one of them)
FACTORIES = {
    "dp_taucc": [lambda: DPTauCC(3, 3, epsilon=0.3, n_iterations=2, random_state=7),
                 lambda: DPTauCC(3, 3, epsilon=5.0, n_iterations=2, random_state=7)],
    "dp_kmeans": [lambda: DPKMeans(n_clusters=6, epsilon=2.0, random_state=7)],
    "dpnmf": [lambda: DPNMF(3, 0.5, random_state=7),
              lambda: DPNMF(2, 5.0, random_state=7)],  # 2 topics for 3 blocks: ‖h‖ ≤ 1 binds
    "colored_noise": [lambda: ColoredNoiseKMeans(3, epsilon=2.0, random_state=7)],
    "dpm": [lambda: DPM(epsilon=2.0, max_depth=2, random_state=7)],
    # B = 20, below the rows' masses: unbounded rows change the tables
    "dp_taucc_row": [lambda: DPTauCCRow(3, 3, epsilon=50.0, n_iterations=2, row_bound=20,
                                        random_state=7)],
}
if have_octave():
    from dptaucc.baselines.dphd import DPHD
    FACTORIES["dphd"] = [lambda: DPHD(n_clusters=3, epsilon=2.0, random_state=7)]


def _released(model) -> list:
    """Every fitted attribute and the ledger, as comparable values."""
    out = []
    for name in sorted(fitted_attributes(model)):
        value = getattr(model, name)
        if name == "privacy_ledger_":
            value = [tuple(sorted(r.items())) for r in value.to_records()]
        elif isinstance(value, tuple):
            value = [np.asarray(v).tolist() for v in value]
        elif isinstance(value, (np.ndarray, np.generic)):
            value = (str(np.asarray(value).dtype), np.asarray(value).tolist())
        out.append((name, repr(value)))
    return out


def test_catalogue_covers_the_required_methods_and_kinds():
    assert len(CATALOGUE) >= 22
    assert {"dp_taucc", "dp_kmeans", "dpnmf", "dphd"} <= {b.method for b in CATALOGUE.values()}
    assert len({b.kind for b in CATALOGUE.values()}) >= 8
    assert all(b.name.startswith(b.method + ".") for b in CATALOGUE.values())


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_each_bug_changes_the_release_and_is_undone(name):
    bug = CATALOGUE[name]
    if bug.method not in FACTORIES:
        pytest.skip(f"{bug.method} needs GNU Octave")
    X = _blocks()
    changed = False
    for make in FACTORIES[bug.method]:
        correct = _released(make().fit(X))
        with bug.applied():
            changed |= _released(make().fit(X)) != correct
        assert _released(make().fit(X)) == correct, f"{name} was not undone"
    assert changed, f"{name} left every release unchanged"


def test_bugs_of_lists_a_methods_bugs():
    assert {b.name for b in bugs_of("dp_taucc")} == {n for n in CATALOGUE
                                                    if n.startswith("dp_taucc.")}
