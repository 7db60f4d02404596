"""The real download path (pooch over HTTP from a local server), mirrors, caches and faults."""

from __future__ import annotations

import http.server
import shutil
import time

import numpy as np
import pytest
from dptaucc.datasets import ChecksumError, DatasetUnavailableError, UnverifiedDownloadWarning
from dptaucc.datasets.download import sha256_of
from dptaucc.datasets.registry import get_entry
from dstest_http import serve

from dptaucc import datasets


def _copy(mirror_dir, dest, *files):
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(mirror_dir / f, dest / f)
    return dest


def _files(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_http_download_then_cache_hit_without_server(mirror_dir, tmp_path, clean_env, capsys):
    cache = tmp_path / "cache"
    with serve(mirror_dir) as url:
        first = datasets.load("cstr", cache_dir=cache, mirror=url, progress=True)
        hitech = datasets.load("hitech", cache_dir=cache, mirror=url, progress=False)
    assert "cstr.txt" in capsys.readouterr().err  # pooch's tqdm progress bar
    raw = cache / "raw"
    assert _files(raw) == sorted(["cstr.txt", "cstr_target.txt", "hitech.mat",
                                  "hitech_target.txt"])
    assert sha256_of(raw / "cstr.txt") == get_entry("cstr").matrix.sha256
    cached = [*raw.iterdir(), *(cache / "parsed").iterdir()]
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in cached)  # readable in a shared cache
    assert (first.X.shape, first.meta["nnz"]) == ((475, 1000), 15989)
    assert hitech.meta["nnz"] == 331373
    # server gone, raw files gone: the second load must come from the parsed .npz cache
    for p in raw.iterdir():
        p.unlink()
    start = time.perf_counter()
    again = datasets.load("cstr", cache_dir=cache, mirror=url, progress=False)
    assert time.perf_counter() - start < 1.0
    assert (again.X != first.X).nnz == 0
    assert np.array_equal(again.row_labels, first.row_labels)
    assert _files(raw) == []


def test_checksum_mismatch_names_file_and_hashes_and_keeps_nothing(mirror_dir, tmp_path,
                                                                  clean_env):
    served = _copy(mirror_dir, tmp_path / "served", "cstr.txt", "cstr_target.txt")
    tampered = served / "cstr.txt"
    tampered.write_bytes(tampered.read_bytes().replace(b"0,30,2", b"0,30,3", 1))
    bad_hash = sha256_of(tampered)
    cache = tmp_path / "cache"
    with serve(served) as url, pytest.raises(ChecksumError) as info:
        datasets.load("cstr", cache_dir=cache, mirror=url, progress=False)
    msg = str(info.value)
    assert "cstr.txt" in msg and get_entry("cstr").matrix.sha256 in msg and bad_hash in msg
    assert isinstance(info.value, ValueError)
    assert _files(cache / "raw") == []  # neither the bad file nor a temporary
    assert not (cache / "parsed" / "cstr.npz").exists()
    # the same through a directory mirror (hash-checked copy)
    with pytest.raises(ChecksumError, match=bad_hash):
        datasets.load("cstr", cache_dir=cache, mirror=served, progress=False)
    assert _files(cache / "raw") == []


def test_unavailable_file_is_a_clear_error(tmp_path, clean_env):
    empty = tmp_path / "empty"
    empty.mkdir()
    with serve(empty) as url, pytest.raises(DatasetUnavailableError,
                                            match="classic3.txt.*not available.*404"):
        datasets.load("classic3", cache_dir=tmp_path / "cache", mirror=url, progress=False)
    assert _files(tmp_path / "cache" / "raw") == []
    # a server that is not there at all
    with serve(empty) as url:
        pass
    with pytest.raises(DatasetUnavailableError, match="could not download.*DPTAUCC_MIRROR"):
        datasets.load("classic3", cache_dir=tmp_path / "cache", mirror=url, progress=False)


class _Truncating(http.server.BaseHTTPRequestHandler):
    """Announces the full length, sends half of the file, then drops the connection."""

    directory = None

    def do_GET(self):  # noqa: N802 - http.server's naming
        body = (self.directory / self.path.lstrip("/")).read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_interrupted_download_leaves_no_file(mirror_dir, tmp_path, clean_env):
    cache = tmp_path / "cache"
    handler = type("H", (_Truncating,), {"directory": mirror_dir})

    def make(*args, directory=None, **kw):
        return handler(*args, **kw)

    with serve(mirror_dir, handler=make) as url, pytest.raises(DatasetUnavailableError):
        datasets.load("tr11", cache_dir=cache, mirror=url, progress=False)
    assert _files(cache / "raw") == []
    # a later load from a good source works and is verified
    with serve(mirror_dir) as url:
        ds = datasets.load("tr11", cache_dir=cache, mirror=url, progress=False)
    assert ds.meta["nnz"] == 116613


def test_corrupted_caches_are_rebuilt(mirror_dir, tmp_path, clean_env):
    cache = tmp_path / "cache"
    ref = datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    npz = cache / "parsed" / "cstr.npz"
    npz.write_bytes(npz.read_bytes()[:100])  # truncated npz
    raw = cache / "raw" / "cstr.txt"
    raw.write_bytes(raw.read_bytes()[:1000])  # truncated raw file: must be refetched
    ds = datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    assert (ds.X != ref.X).nnz == 0
    assert sha256_of(raw) == get_entry("cstr").matrix.sha256
    assert [p.name for p in npz.parent.iterdir()] == ["cstr.npz"]  # no temporaries


def test_environment_variables(mirror_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DPTAUCC_DATA_DIR", str(tmp_path / "envcache"))
    monkeypatch.setenv("DPTAUCC_MIRROR", str(mirror_dir))
    assert datasets.cache_dir() == tmp_path / "envcache"
    datasets.load("cstr", progress=False)
    assert (tmp_path / "envcache" / "parsed" / "cstr.npz").is_file()
    with serve(mirror_dir) as url:
        monkeypatch.setenv("DPTAUCC_MIRROR", url + "/")
        datasets.load("tr11", progress=False)
    assert (tmp_path / "envcache" / "raw" / "tr11.txt").is_file()
    monkeypatch.setenv("DPTAUCC_MIRROR", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="neither an http"):
        datasets.load("tr41", progress=False)


def _fake_sports(folder, mirror_dir):
    """A sports.txt with the registry's shape (8580 × 14870), one word per row, and real labels."""
    folder.mkdir(parents=True, exist_ok=True)
    words = np.arange(14870)
    docs = words % 8580
    body = "\n".join(f"{d},{w},{1 + w % 3}" for d, w in zip(docs, words, strict=True))
    (folder / "sports.txt").write_text("doc,word,cluster\n" + body + "\n")
    shutil.copy(mirror_dir / "sports_target.txt", folder / "sports_target.txt")
    return folder


def test_sports_needs_explicit_opt_in(mirror_dir, tmp_path, clean_env):
    cache = tmp_path / "cache"
    with pytest.raises(DatasetUnavailableError, match="no known checksum.*allow_unverified=True"):
        datasets.load("sports", cache_dir=cache, mirror=mirror_dir)
    served = _fake_sports(tmp_path / "served", mirror_dir)
    seen = sha256_of(served / "sports.txt")
    with serve(served) as url:
        with pytest.warns(UnverifiedDownloadWarning, match="sports.txt"):
            ds = datasets.load("sports", cache_dir=cache, mirror=url, allow_unverified=True,
                               progress=False)
    assert ds.meta["verified"] is False
    assert ds.meta["sources"]["sports.txt"] == seen
    assert (cache / "raw" / "sports.txt.sha256").read_text().strip() == seen
    assert ds.X.shape == (8580, 14870) and ds.meta["nnz"] == 14870
    assert ds.meta["class_sizes"] == [2346, 145, 809, 336, 122, 3412, 1410]
    again = datasets.load("sports", cache_dir=cache, progress=False)  # no server: from cache
    assert again.meta["sources"] == ds.meta["sources"]


def test_sports_labels_still_verified(mirror_dir, tmp_path, clean_env):
    served = _fake_sports(tmp_path / "served", mirror_dir)
    (served / "sports_target.txt").write_text("0\n" * 8580)
    with serve(served) as url, pytest.raises(ChecksumError, match="sports_target.txt"):
        with pytest.warns(UnverifiedDownloadWarning):
            datasets.load("sports", cache_dir=tmp_path / "cache", mirror=url,
                          allow_unverified=True, progress=False)


def test_sports_copy_placed_in_cache_by_hand(mirror_dir, tmp_path, clean_env):
    cache = tmp_path / "cache"
    _fake_sports(cache / "raw", mirror_dir)
    with pytest.raises(DatasetUnavailableError, match="allow_unverified"):
        datasets.load("sports", cache_dir=cache, mirror=mirror_dir)
    assert (cache / "raw" / "sports.txt").is_file()  # the user's copy is not deleted
    with pytest.warns(UnverifiedDownloadWarning, match="without a known checksum"):
        ds = datasets.load("sports", cache_dir=cache, mirror=mirror_dir, allow_unverified=True)
    assert ds.meta["sources"]["sports.txt"] == sha256_of(cache / "raw" / "sports.txt")


def test_stale_cached_file_is_never_trusted(mirror_dir, tmp_path, clean_env):
    cache = tmp_path / "cache"
    datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    (cache / "parsed" / "cstr.npz").unlink()
    raw = cache / "raw" / "cstr.txt"
    raw.write_bytes(raw.read_bytes().replace(b"0,30,2", b"0,30,9", 1))  # same size, other bytes
    empty = tmp_path / "empty"
    empty.mkdir()
    with serve(empty) as url, pytest.raises(DatasetUnavailableError, match="404"):
        datasets.load("cstr", cache_dir=cache, mirror=url, progress=False)
    assert not (cache / "parsed" / "cstr.npz").exists()


def test_npz_cache_write_is_atomic(mirror_dir, tmp_path, clean_env, monkeypatch):
    import dptaucc.datasets.cache as cache_mod

    cache = tmp_path / "cache"
    ref = datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    npz = cache / "parsed" / "cstr.npz"
    before = npz.read_bytes()
    real_savez = np.savez

    def crash(fh, **arrays):  # writes part of a file, then dies
        real_savez(fh, data=arrays["data"])
        raise KeyboardInterrupt

    monkeypatch.setattr(cache_mod.np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        cache_mod.write_parsed(npz, ref.X, ref.row_labels, ref.meta["sources"])
    assert npz.read_bytes() == before
    assert [p.name for p in npz.parent.iterdir()] == ["cstr.npz"]
    npz.unlink()
    with pytest.raises(KeyboardInterrupt):
        datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    assert list(npz.parent.iterdir()) == []  # no half-written cache a later load could trust
    monkeypatch.undo()
    again = datasets.load("cstr", cache_dir=cache, mirror=mirror_dir, progress=False)
    assert (again.X != ref.X).nnz == 0


def test_sports_from_directory_mirror_and_changed_file(mirror_dir, tmp_path, clean_env):
    served = _fake_sports(tmp_path / "served", mirror_dir)
    cache = tmp_path / "cache"
    with pytest.warns(UnverifiedDownloadWarning, match="served/sports.txt"):
        first = datasets.load("sports", cache_dir=cache, mirror=served, allow_unverified=True)
    # the cached copy changes behind our back: its first-use hash no longer matches
    raw = cache / "raw" / "sports.txt"
    raw.write_text(raw.read_text().replace("\n0,0,1\n", "\n0,0,2\n", 1))
    (cache / "parsed" / "sports.npz").unlink()
    with pytest.raises(DatasetUnavailableError, match="no longer matches the SHA-256"):
        datasets.load("sports", cache_dir=cache, mirror=served)
    with pytest.warns(UnverifiedDownloadWarning):
        again = datasets.load("sports", cache_dir=cache, mirror=served, allow_unverified=True)
    assert again.meta["sources"] == first.meta["sources"]
    assert (again.X != first.X).nnz == 0


def test_default_source_is_the_public_url(mirror_dir, tmp_path, clean_env, monkeypatch):
    import dptaucc.datasets.download as dl

    seen = []

    def fake_download(entry, url, target, progress):  # stands in for the network
        seen.append(url)
        shutil.copy(mirror_dir / entry.file, target)

    monkeypatch.setattr(dl, "_download", fake_download)
    ds = datasets.load("tr41", cache_dir=tmp_path, progress=False)
    entry = get_entry("tr41")
    assert seen == [entry.matrix.url, entry.labels.url]
    assert seen[0] == "https://raw.githubusercontent.com/rupensa/dptaucc/main/data/tr41.txt"
    assert ds.meta["nnz"] == 171509
