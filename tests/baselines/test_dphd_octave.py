"""The persistent Octave behind DPHD: the wire format, one matrix sent once, the dense path,
timeouts, an Octave that dies or fails, clean shutdown, forks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from dptaucc.baselines.dphd import (
    DPHD,
    OctaveDiedError,
    OctaveError,
    OctaveTimeoutError,
    octave,
    protocol,
)
from dptaucc.baselines.dphd import estimator as est_mod
from dptaucc.baselines.dphd.matrix_keys import MatrixFacts, content_key
from dptaucc.baselines.dphd.testing import have_octave

_skip_without_octave = pytest.mark.skipif(not have_octave(),
                                          reason="GNU Octave (octave-cli) not installed")


def octave_test(test):
    """A test that runs DPHD in GNU Octave: marked ``octave`` (not in ``make test-fast``) and
    skipped where Octave is not installed."""
    return pytest.mark.octave(_skip_without_octave(test))


def _counts(n=60, d=20, seed=0, density=0.3):
    rng = np.random.default_rng(seed)
    X = rng.poisson(2.0, size=(n, d)) * (rng.random((n, d)) < density)
    return sp.csr_matrix(X.astype(float))


def _gone(pid: int, within: float = 10.0) -> bool:
    """True once process ``pid`` has exited (reaped or a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
            if state == "Z":
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


# -- the wire format ------------------------------------------------------------------------
def _roundtrip(value):
    return protocol.decode(b"".join(bytes(memoryview(c).cast("B"))
                                    for c in protocol.encode(value)))


def test_protocol_round_trips_every_type():
    value = {"a": 1.5, "text": "héllo", "ints": np.arange(6, dtype=np.int64).reshape(2, 3),
             "f": np.linspace(0, 1, 12).reshape(3, 4), "empty": np.zeros((0, 3)),
             "list": ["x", 2.0, []], "nested": {"inf": np.inf}, "flag": True,
             "sparse": sp.random(5, 7, density=0.3, random_state=0, format="csr")}
    out = _roundtrip(value)
    assert out["a"].shape == (1, 1) and out["a"][0, 0] == 1.5 and out["text"] == "héllo"
    np.testing.assert_array_equal(out["ints"], value["ints"])
    np.testing.assert_array_equal(out["f"], value["f"])
    assert out["empty"].shape == (0, 3) and out["list"][0] == "x" and out["list"][2] == []
    assert out["nested"]["inf"][0, 0] == np.inf and out["flag"][0, 0] == 1.0
    np.testing.assert_array_equal(out["sparse"].toarray(), value["sparse"].toarray())


def test_protocol_refuses_what_cannot_travel():
    with pytest.raises(protocol.ProtocolError, match="type"):
        protocol.encode(object())
    with pytest.raises(protocol.ProtocolError, match="2\\^53"):
        protocol.encode(np.array([2**60], dtype=np.int64))
    with pytest.raises(protocol.ProtocolError, match="tag"):
        protocol.decode(b"z")
    with pytest.raises(protocol.ProtocolError, match="ended"):
        protocol.decode(b"d" + np.array([2, 3], dtype="<i8").tobytes())


@octave_test
def test_octave_reads_and_writes_the_same_format():
    value = {"m": np.arange(12.0).reshape(3, 4), "s": "text", "c": ["a", np.ones((2, 1))]}
    (back,) = octave.call("deal", value)
    np.testing.assert_array_equal(back["m"], value["m"])
    assert back["s"] == "text" and back["c"][0] == "a"
    X = sp.random(6, 9, density=0.4, random_state=1, format="csc")
    (dense,) = octave.call("full", X)
    np.testing.assert_array_equal(dense, X.toarray())


# -- each matrix once, the dense path -----------------------------------------------------------
def _puts(monkeypatch) -> list[str]:
    sent: list[str] = []
    original = octave.OctaveSession.request

    def spy(self, message, *args, **kwargs):
        if message.get("cmd") == "put":
            sent.append(message["key"])
        return original(self, message, *args, **kwargs)

    monkeypatch.setattr(octave.OctaveSession, "request", spy)
    return sent


@octave_test
def test_a_matrix_travels_once_per_content(monkeypatch):
    X = _counts(seed=5)
    sent = _puts(monkeypatch)
    for eps in (0.5, 2.0):
        for seed in (0, 1):
            DPHD(n_clusters=2, epsilon=eps, random_state=seed).fit(X)
    DPHD(n_clusters=2, random_state=0).fit(X.toarray())  # same content, another container
    assert len(sent) == 1
    DPHD(n_clusters=2, mode="paper", random_state=0).fit(X)  # paper mode: the raw counts
    DPHD(n_clusters=2, max_value=3, random_state=0).fit(X)  # other public clipping
    assert len(sent) == 3 and len(set(sent)) == 3


@octave_test
def test_least_recently_used_matrices_are_dropped(monkeypatch):
    monkeypatch.setattr(octave, "MAX_CACHED_MATRICES", 2)
    octave.shutdown()  # start from an empty cache
    sent = _puts(monkeypatch)
    mats = [_counts(seed=20 + i) for i in range(3)]
    for X in mats + mats[2:] + mats[:1]:
        DPHD(n_clusters=2, random_state=0).fit(X)
    assert len(sent) == 4  # the first matrix was dropped, so it travelled again
    assert len(octave.session().cached) == 2


def test_content_key_depends_on_content_and_context():
    X = _counts(seed=3)
    same = sp.csr_matrix(X.toarray())
    assert content_key(X, "a") == content_key(same, "a")
    assert content_key(X, "a") != content_key(X, "b")
    other = X.copy()
    other.data[0] += 1
    assert content_key(X, "a") != content_key(other, "a")


def test_remembered_keys_are_the_content_keys_of_what_the_matrix_holds_now():
    facts = MatrixFacts(size=2)
    X, full = _counts(seed=3), _counts(seed=4, density=1.0)
    for M in (X, full, X, full):
        for context in ("a", "b"):
            assert facts.key(M, context) == content_key(M, context)
    for M in (X, full):  # changed in place: a new content, a new key
        M.data[-1] += 1
        assert facts.key(M, "a") == content_key(M, "a")
    moved = X.copy()
    moved.indices[[0, 1]] = moved.indices[[1, 0]]  # the same values in other cells
    moved.has_canonical_format = False
    assert facts.key(moved, "a") == content_key(moved, "a") != content_key(X, "a")


def test_a_frozen_matrix_keeps_its_facts_on_itself_without_a_copy():
    from dptaucc.validation import freeze_count_matrix

    facts = MatrixFacts(size=1)
    X = freeze_count_matrix(_counts(seed=5))
    calls = []

    def biggest(M):
        calls.append(1)
        return float(M.max())

    assert facts.key(X, "a") == content_key(X, "a")
    assert facts.get(X, "max", biggest) == facts.get(X, "max", biggest) == X.max()
    other = freeze_count_matrix(_counts(seed=5))  # the same values, frozen apart: its own facts
    assert facts.get(other, "max", biggest) == X.max() and len(calls) == 2
    assert facts._known == []  # nothing copied or compared


@octave_test
def test_a_matrix_changed_in_place_travels_again(monkeypatch):
    X = _counts(seed=6)
    sent = _puts(monkeypatch)
    DPHD(n_clusters=2, random_state=0).fit(X)
    X.data[0] += 1
    DPHD(n_clusters=2, random_state=0).fit(X)
    assert len(sent) == 2 and len(set(sent)) == 2


def test_dense_matrices_go_dense():
    assert isinstance(est_mod.octave_matrix(_counts(density=1.0)), np.ndarray)
    sparse = est_mod.octave_matrix(_counts(density=0.1))
    assert sp.issparse(sparse) and sparse.shape == (20, 60)


@octave_test
@pytest.mark.parametrize("mode", ["corrected", "paper"])
@pytest.mark.parametrize("shift", [0, 1])  # 86 % of the cells non-zero; every cell stored
def test_dense_path_gives_the_labels_of_the_sparse_path(monkeypatch, mode, shift):
    X = sp.csr_matrix(_counts(n=80, d=40, seed=9, density=1.0).toarray() + shift)

    def fits():
        models = [DPHD(n_clusters=3, epsilon=e, mode=mode, random_state=s).fit(X)
                  for e in (0.5, 5.0) for s in (0, 1)]
        return [(m, m.predict(X), m.evaluation_row_labels(X)) for m in models]

    dense = fits()
    monkeypatch.setattr(est_mod, "DENSE_MIN_DENSITY", 2.0)  # never dense, in Python or Octave
    for (a, a_pred, a_eval), (b, b_pred, b_eval) in zip(dense, fits(), strict=True):
        np.testing.assert_array_equal(a_pred, b_pred)
        np.testing.assert_array_equal(a_eval, b_eval)
        np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-9)
        if mode == "paper":
            np.testing.assert_array_equal(a.row_labels_, b.row_labels_)


@octave_test
def test_octave_runs_on_one_blas_thread_and_knows_whole_matrices_from_python():
    assert octave.call("getenv", "OPENBLAS_NUM_THREADS")[0] == str(octave.OCTAVE_THREADS) == "1"
    assert octave.call("getenv", "OMP_NUM_THREADS")[0] == "1"
    whole, halves = _counts(seed=4).T.tocsc(), np.array([[1.0, 2.5], [0.0, 3.0]])
    for matrix, expected in [(whole, True), (whole.toarray(), True), (halves, False),
                             (sp.csc_matrix(halves), False)]:
        assert octave._integral(matrix) is expected  # what a put tells Octave
        assert bool(octave.call("dphd_data", matrix)[0]["integral"]) is expected  # its own


# -- timeouts, failures, deaths ------------------------------------------------------------------
@octave_test
def test_a_hung_octave_is_killed_at_the_timeout_and_replaced():
    before = octave.session().process.pid
    t0 = time.monotonic()
    with pytest.raises(OctaveTimeoutError, match="in time"):
        octave.call("pause", 30.0, nargout=0, timeout=0.5)
    assert time.monotonic() - t0 < 5
    assert _gone(before)
    X = _counts(seed=1)
    DPHD(n_clusters=2, random_state=0).fit(X)  # a new Octave serves the next fit
    assert octave.session().process.pid != before
    with pytest.raises(OctaveTimeoutError):
        DPHD(n_clusters=2, random_state=0, timeout=1e-4).fit(_counts(seed=2))


@octave_test
def test_an_octave_error_keeps_the_process():
    pid = octave.session().process.pid
    with pytest.raises(OctaveError, match="DPHD-OCTAVE-ERROR: boom 3"):
        octave.call("error", "boom %d", 3.0, nargout=0)
    assert octave.call("plus", 1.0, 2.0)[0][0, 0] == 3.0
    assert octave.session().process.pid == pid


@octave_test
def test_a_python_error_in_a_mechanism_stops_the_fit_and_keeps_the_process():
    pid = octave.session().process.pid

    def failing(request):
        raise RuntimeError("no noise today")

    with pytest.raises(RuntimeError, match="no noise today"):
        octave.call("dphd_select_round", np.ones((3, 1)), 1.0, handler=failing)
    assert octave.session().process.pid == pid
    assert octave.call("plus", 1.0, 2.0)[0][0, 0] == 3.0


@octave_test
def test_an_octave_killed_between_fits_is_replaced():
    X = _counts(seed=4)
    ref = DPHD(n_clusters=2, epsilon=2.0, random_state=3).fit(X)
    pid = octave.session().process.pid
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    again = DPHD(n_clusters=2, epsilon=2.0, random_state=3).fit(X)
    np.testing.assert_array_equal(again.cluster_centers_, ref.cluster_centers_)


@octave_test
def test_an_octave_dying_during_a_fit_is_restarted_and_the_fit_rerun(monkeypatch):
    X = _counts(seed=6)
    ref = DPHD(n_clusters=2, epsilon=2.0, random_state=8).fit(X)
    calls = {"n": 0}
    original = est_mod.MechanismServer.__call__

    def dying(self, request):
        calls["n"] += 1
        if calls["n"] == 5:  # once, in the middle of the first attempt
            os.kill(octave.session().process.pid, signal.SIGKILL)
        return original(self, request)

    monkeypatch.setattr(est_mod.MechanismServer, "__call__", dying)
    again = DPHD(n_clusters=2, epsilon=2.0, random_state=8).fit(X)
    np.testing.assert_array_equal(again.cluster_centers_, ref.cluster_centers_)
    assert again.privacy_ledger_.to_records() == ref.privacy_ledger_.to_records()

    def always(self, request):
        os.kill(octave.session().process.pid, signal.SIGKILL)
        return original(self, request)

    monkeypatch.setattr(est_mod.MechanismServer, "__call__", always)
    with pytest.raises(OctaveDiedError, match="died twice.*SIGKILL"):
        DPHD(n_clusters=2, epsilon=2.0, random_state=8).fit(X)


@octave_test
def test_a_changed_executable_is_used_at_once(monkeypatch):
    octave.session()
    monkeypatch.setattr(octave, "OCTAVE_EXECUTABLE", "no-such-octave-cli-xyz")
    with pytest.raises(octave.OctaveNotFoundError):
        octave.call("plus", 1.0, 2.0)


# -- process lifetime ----------------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np, scipy.sparse as sp
    from dptaucc.baselines.dphd import DPHD, octave
    X = sp.csr_matrix(np.random.default_rng(0).poisson(2.0, size=(30, 8)).astype(float))
    DPHD(n_clusters=2, random_state=0).fit(X)
    s = octave.session()
    print(s.process.pid, s.dir, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
""")


def _child(mode: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CHILD, mode], stdout=subprocess.PIPE,
                            text=True, cwd=cwd)


@octave_test
def test_octave_quits_when_python_exits(tmp_path):
    child = _child("exit", tmp_path)
    pid, where = child.stdout.readline().split()
    assert child.wait(timeout=60) == 0
    assert _gone(int(pid)) and not Path(where).exists()


@octave_test
def test_octave_quits_when_python_is_killed(tmp_path):
    child = _child("hang", tmp_path)
    pid, where = child.stdout.readline().split()
    child.kill()
    child.wait(timeout=30)
    assert _gone(int(pid)) and not Path(where).exists()


@octave_test
def test_a_forked_child_starts_its_own_octave():
    X = _counts(seed=12)
    parent = octave.session().process.pid
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            DPHD(n_clusters=2, random_state=0).fit(X)
            code = 0 if octave.session().process.pid != parent else 2
            octave.shutdown()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert octave.session().process.pid == parent
    DPHD(n_clusters=2, random_state=0).fit(X)
