"""Verified downloads into the data cache: pooch over HTTP(S), or a hash-checked copy from a mirror.

Cache layout (``cache_dir()``): ``raw/<file>`` holds the upstream files, ``parsed/<name>.npz``
the parsed matrices (see ``cache.py``). A file enters ``raw/`` only through a temporary file
in the same folder that is renamed after its SHA-256 matched, so an interrupted or tampered
download never leaves a file that a later load would trust.

Mirror (``mirror=`` or ``$DPTAUCC_MIRROR``): either a directory holding the upstream file
names (files missing there fall back to the public URL) or a base URL that replaces the
public one (``<base>/<file>``; no fallback, the mirror is authoritative).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path

from .registry import FileEntry

__all__ = [
    "DatasetError", "ChecksumError", "DatasetUnavailableError", "UnverifiedDownloadWarning",
    "cache_dir", "resolve_mirror", "fetch_file", "sha256_of",
]

DATA_DIR_ENV = "DPTAUCC_DATA_DIR"
# temporary files are created 0600; cached files are made world-readable (shared caches)
FILE_MODE = 0o644
MIRROR_ENV = "DPTAUCC_MIRROR"


class DatasetError(RuntimeError):
    """A dataset file could not be obtained.

    One ``except DatasetError`` catches the two ways a file can be missing:

    >>> issubclass(ChecksumError, DatasetError), issubclass(DatasetUnavailableError, DatasetError)
    (True, True)
    """


class ChecksumError(DatasetError, ValueError):
    """A file's SHA-256 differs from the registry's; the bad file was not kept.

    >>> issubclass(ChecksumError, ValueError)  # bad content: a ValueError too
    True
    """


class DatasetUnavailableError(DatasetError):
    """A file is neither cached nor downloadable (no network, 404, missing from the mirror).

    >>> issubclass(DatasetUnavailableError, ValueError)  # not bad content: no ValueError
    False
    """


class UnverifiedDownloadWarning(UserWarning):
    """A file without a known checksum was downloaded (explicit ``allow_unverified=True``).

    >>> issubclass(UnverifiedDownloadWarning, UserWarning)  # shown once by default
    True
    """


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """The data cache: ``path``, else ``$DPTAUCC_DATA_DIR``, else the user cache folder.

    >>> cache_dir("~/dptaucc-data").name
    'dptaucc-data'
    """
    if path is None:
        path = os.environ.get(DATA_DIR_ENV) or None
    if path is None:
        import pooch

        path = pooch.os_cache("dptaucc-bench")
    return Path(path).expanduser()


def resolve_mirror(mirror: str | os.PathLike | None) -> str | Path | None:
    """``mirror``, else ``$DPTAUCC_MIRROR``: a ``Path`` (directory), a base URL, or None.

    >>> import tempfile
    >>> resolve_mirror("https://example.org/data/")
    'https://example.org/data'
    >>> folder = tempfile.mkdtemp()
    >>> resolve_mirror("file://" + folder).is_dir()
    True
    >>> resolve_mirror(folder + "/missing")
    Traceback (most recent call last):
    ...
    ValueError: mirror '.../missing' is neither an http(s) URL nor an existing directory
    """
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV) or None
    if mirror is None:
        return None
    text = os.fspath(mirror)
    if text.startswith(("http://", "https://", "ftp://")):
        return text.rstrip("/")
    if text.startswith("file://"):
        text = text[len("file://"):]
    path = Path(text).expanduser()
    if not path.is_dir():
        raise ValueError(f"mirror {text!r} is neither an http(s) URL nor an existing directory")
    return path


def sha256_of(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks.

    >>> import hashlib, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "blob"
    >>> _ = path.write_bytes(b"x" * (3 << 20))  # three chunks
    >>> sha256_of(path) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()
    True
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _mismatch(entry: FileEntry, source: str, got: str) -> ChecksumError:
    return ChecksumError(
        f"checksum mismatch for {entry.file} (dataset {entry.dataset}) from {source}: "
        f"expected SHA-256 {entry.sha256}, got {got}; the file was not kept in the cache"
    )


def _cached_ok(entry: FileEntry, target: Path) -> bool:
    """True when ``target`` exists and is the file the registry (or first download) describes."""
    if not target.is_file():
        return False
    expected = entry.sha256
    if expected is None:
        side = _sidecar(target)
        expected = side.read_text().strip() if side.is_file() else None
        if expected is None:
            return False
    return sha256_of(target) == expected


def _copy_verified(entry: FileEntry, source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` through a temporary file, renamed only if the hash matches."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            shutil.copyfileobj(src, out, length=1 << 20)
        got = sha256_of(tmp)
        if entry.sha256 is not None and got != entry.sha256:
            raise _mismatch(entry, str(source), got)
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _download(entry: FileEntry, url: str, target: Path, progress: bool) -> None:
    """pooch download (streamed to a temp file in ``target``'s folder, hash-checked, renamed)."""
    import pooch
    import requests
    from tqdm.auto import tqdm

    known = None if entry.sha256 is None else f"sha256:{entry.sha256}"
    # A bar named after the file (pooch's own bar is anonymous; its log line may be swallowed
    # by an application's logging setup, e.g. Hydra's).
    bar = (tqdm(desc=entry.file, total=1, unit="B", unit_scale=True, leave=True)
           if progress else False)  # total is set by pooch once the size is known
    try:
        pooch.retrieve(url, known_hash=known, fname=target.name, path=target.parent,
                       progressbar=bar)
        os.chmod(target, FILE_MODE)
    except requests.exceptions.HTTPError as exc:
        raise DatasetUnavailableError(
            f"{entry.file} (dataset {entry.dataset}) is not available at {url}: {exc}"
        ) from exc
    except requests.exceptions.RequestException as exc:
        raise DatasetUnavailableError(
            f"could not download {entry.file} (dataset {entry.dataset}) from {url}: {exc}. "
            f"Without network, point ${MIRROR_ENV} (or mirror=) at a directory holding the file, "
            f"or copy it to {target}"
        ) from exc
    except ValueError as exc:
        if "does not match the known hash" not in str(exc):
            raise
        # pooch has already deleted the temporary download; report both hashes ourselves.
        got = _hash_from_pooch_message(str(exc))
        raise _mismatch(entry, url, got) from exc
    finally:
        if bar is not False:
            bar.close()


def _hash_from_pooch_message(message: str) -> str:
    """The hash pooch computed, out of its mismatch message (pooch deleted the file itself)."""
    found = re.search(r"but got ([0-9a-fA-F]{64})", message)
    return found.group(1).lower() if found else "<unknown>"


def fetch_file(entry: FileEntry, *, cache: str | os.PathLike | None = None,
               mirror: str | os.PathLike | None = None, allow_unverified: bool = False,
               progress: bool = True) -> Path:
    """Return the verified local path of ``entry`` in ``cache/raw``, fetching it if needed.

    Files without a known SHA-256 (sports) are fetched only with ``allow_unverified=True``;
    the hash seen on that first download is written next to the file (``<file>.sha256``)
    and checked on every later use (trust on first use).

    >>> import pathlib, tempfile
    >>> from dptaucc.datasets.registry import FileEntry
    >>> mirror, cache = pathlib.Path(tempfile.mkdtemp()), tempfile.mkdtemp()
    >>> _ = (mirror / "toy.txt").write_text("row,col,count\\n0,0,1\\n")
    >>> entry = FileEntry("toy", "matrix", "toy.txt", "https://example.org/toy.txt",
    ...                   sha256_of(mirror / "toy.txt"), "triplets")
    >>> path = fetch_file(entry, cache=cache, mirror=mirror, progress=False)  # from the mirror
    >>> path.name, path.parent.name, sha256_of(path) == entry.sha256
    ('toy.txt', 'raw', True)
    >>> bad = FileEntry("toy", "matrix", "toy.txt", entry.url, "0" * 64, "triplets")
    >>> fetch_file(bad, cache=tempfile.mkdtemp(), mirror=mirror, progress=False)
    Traceback (most recent call last):
    ...
    dptaucc.datasets.download.ChecksumError: ...
    """
    raw = cache_dir(cache) / "raw"
    target = raw / entry.file
    if _cached_ok(entry, target):
        return target
    if not entry.verified and not allow_unverified:
        state = ("its cached copy no longer matches the SHA-256 recorded at first use"
                 if _sidecar(target).is_file() else f"it is not in the cache ({raw})")
        raise DatasetUnavailableError(
            f"{entry.file} (dataset {entry.dataset}) has no known checksum and {state}. "
            f"To download it from {entry.url}, pass allow_unverified=True "
            f"(CLI: python -m dptaucc.datasets fetch {entry.dataset} --allow-unverified); "
            "offline, copy "
            f"the file to {target} or into the directory named by ${MIRROR_ENV} and pass "
            "allow_unverified=True to use it"
        )
    if not entry.verified and target.is_file() and not _sidecar(target).is_file():
        # a copy the user placed in the cache by hand: trust it on first use, record its hash
        warnings.warn(
            f"using {target} (dataset {entry.dataset}) without a known checksum "
            "(allow_unverified=True); its SHA-256 is recorded in the cache and the dataset's meta",
            UnverifiedDownloadWarning, stacklevel=3,
        )
        _sidecar(target).write_text(sha256_of(target) + "\n")
        return target
    raw.mkdir(parents=True, exist_ok=True)
    if not entry.verified:
        # a first-use file whose bytes changed since: forget it (pooch would keep a file it
        # cannot check). A verified file is never unlinked here: a stale copy is replaced
        # atomically by the new one, and it is re-hashed before any use anyway, so another
        # process that has just fetched it cannot lose it under its feet.
        target.unlink(missing_ok=True)
        _sidecar(target).unlink(missing_ok=True)
    mirror_loc = resolve_mirror(mirror)
    from_dir = isinstance(mirror_loc, Path) and (mirror_loc / entry.file).is_file()
    if from_dir:
        source = str(mirror_loc / entry.file)
    else:
        source = f"{mirror_loc}/{entry.file}" if isinstance(mirror_loc, str) else entry.url
    if not entry.verified:
        warnings.warn(
            f"fetching {entry.file} (dataset {entry.dataset}) from {source} without a known "
            "checksum (allow_unverified=True); its SHA-256 is recorded in the cache and "
            "the dataset's meta",
            UnverifiedDownloadWarning, stacklevel=3,
        )
    if from_dir:
        _copy_verified(entry, Path(source), target)
    else:
        _download(entry, source, target, progress)
    if not entry.verified:
        _sidecar(target).write_text(sha256_of(target) + "\n")
    return target


def recorded_sha256(entry: FileEntry, path: Path) -> str:
    """The SHA-256 a fetched file is known by: the registry's, else the one recorded at download."""
    if entry.sha256 is not None:
        return entry.sha256
    side = _sidecar(path)
    return side.read_text().strip() if side.is_file() else sha256_of(path)
