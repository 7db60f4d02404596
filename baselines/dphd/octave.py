"""One persistent GNU Octave process per Python process, serving the DPHD ``*.m`` files.

Starting Octave costs about 0.1-0.2 s and re-reading a matrix from a file costs more at
benchmark sizes, so a Python process keeps one ``octave-cli`` running (started at its first
fit) and talks to it over two named pipes in a private temporary directory, in the small
binary format of :mod:`~dptaucc.baselines.dphd.protocol`:

* each matrix travels once: Octave keeps the last few (:data:`MAX_CACHED_MATRICES`, at most
  :data:`MAX_CACHED_BYTES`) under a key the caller derives from their content, so the fits of
  one dataset (every ε, mode and seed of a sweep) reuse it;
* Octave runs with :data:`OCTAVE_THREADS` BLAS/OpenMP threads (one: a sweep runs one worker
  per core, and DPHD's products are too small to gain from more);
* while a fit runs, Octave sends each corrected-mode mechanism call back to Python, which
  draws the noise from the fit's sampler and charges the fit's ledger (``handler``);
* every exchange has a deadline: a fit that does not finish in time (``timeout``) gets its
  Octave killed (:class:`OctaveTimeoutError`), so a hung Octave never hangs a sweep;
* an Octave that died (killed, out of memory) is replaced by a fresh one at the next call;
  dying during a call raises :class:`OctaveDiedError` with the end of Octave's own output;
* at interpreter exit the process is told to quit (then killed if it does not) and its
  directory removed; if Python dies first, Octave sees its request pipe close, exits and
  removes the directory itself. A forked child never touches its parent's Octave.

Octave's stdout and stderr go to a log file in the same directory (nothing can block on an
unread pipe); errors raised inside Octave come back as :class:`OctaveError` with Octave's
message and stack. Needs POSIX named pipes (Linux, macOS).
"""

from __future__ import annotations

import atexit
import collections
import errno
import fcntl
import math
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dptaucc.kernels import value_summary

from . import protocol

__all__ = ["OCTAVE_EXECUTABLE", "DEFAULT_TIMEOUT", "MAX_CACHED_MATRICES", "MAX_CACHED_BYTES",
           "OctaveError", "OctaveNotFoundError", "OctaveTimeoutError", "OctaveDiedError",
           "OctaveSession", "find_octave", "session", "shutdown", "run_fit", "call"]

#: Program used to run Octave; override with the environment variable ``DPTAUCC_OCTAVE`` or by
#: assigning this attribute (read at every call; a change starts a new Octave).
OCTAVE_EXECUTABLE: str = os.environ.get("DPTAUCC_OCTAVE", "octave-cli")

#: BLAS and OpenMP threads of the Octave process (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``
#: in its environment): one, so that the workers of a sweep, one per core, do not
#: oversubscribe the cores; DPHD's matrix products stream the data and gain little from more.
OCTAVE_THREADS = 1

#: Seconds a call may take by default (start-up and sending the matrix included).
DEFAULT_TIMEOUT = 600.0

#: Matrices Octave keeps between calls (least recently used dropped first), and their bytes:
#: a sweep that runs dataset by dataset needs two (the raw counts for paper mode and the
#: clipped ones for corrected mode); more would only add to the worker's memory.
MAX_CACHED_MATRICES = 2
MAX_CACHED_BYTES = 2**30

#: Seconds allowed for Octave to start and answer, whatever the call's own timeout.
START_TIMEOUT = 120.0

#: Seconds Octave gets to abandon a fit that Python stopped (the handler raised, e.g. the
#: privacy audit stopping a replayed fit after the call it samples) before it is killed.
STOP_TIMEOUT = 10.0

#: Bytes each pipe holds (Linux's default is 64 KiB; 1 MiB is its default limit for users):
#: a fit's mechanism requests and answers (k x d cluster sums) then pass in one write each.
PIPE_BYTES = 1 << 20

M_FILES_DIR = Path(__file__).resolve().parent

_MECHANISM_OPS = ("discrete-laplace", "exponential", "charge")

#: Serves one mechanism request from Octave (a dict) and returns the release (int64 array).
Handler = Callable[[dict], np.ndarray]


class OctaveNotFoundError(RuntimeError):
    """GNU Octave is not installed (or not where the wrapper was told to look).

    >>> try:
    ...     find_octave("no-such-octave-program")
    ... except OctaveNotFoundError as error:
    ...     print(str(error)[:60])
    GNU Octave (octave-cli) not found: 'no-such-octave-program'
    """


class OctaveError(RuntimeError):
    """Octave failed; the message carries Octave's own error text.

    >>> issubclass(OctaveTimeoutError, OctaveError), issubclass(OctaveDiedError, OctaveError)
    (True, True)
    >>> from dptaucc.baselines.dphd.testing import have_octave
    >>> if have_octave():
    ...     try:
    ...         call("no_such_octave_function")
    ...     except OctaveError as error:
    ...         message = str(error)
    ... else:
    ...     message = "DPHD-OCTAVE-ERROR: (Octave not installed)"
    >>> message.startswith("DPHD-OCTAVE-ERROR")
    True
    """


class OctaveTimeoutError(OctaveError):
    """A call did not finish in time; its Octave process was killed.

    >>> issubclass(OctaveTimeoutError, OctaveError)  # one except clause catches both
    True
    """


class OctaveDiedError(OctaveError):
    """The Octave process exited or was killed while serving a call.

    >>> issubclass(OctaveDiedError, OctaveError), issubclass(OctaveDiedError, OctaveTimeoutError)
    (True, False)
    """


def find_octave(executable: str | None = None) -> str:
    """Full path of the Octave program, or :class:`OctaveNotFoundError` naming it.

    >>> import os
    >>> os.path.isabs(find_octave("sh"))  # any program on PATH
    True
    >>> find_octave("no-such-octave-program")
    Traceback (most recent call last):
    ...
    dptaucc.baselines.dphd.octave.OctaveNotFoundError: GNU Octave (octave-cli) not found: ...
    """
    name = executable if executable is not None else OCTAVE_EXECUTABLE
    path = shutil.which(name)
    if path is None:
        raise OctaveNotFoundError(
            f"GNU Octave (octave-cli) not found: {name!r} is not an executable program on PATH. "
            "DPHD runs in Octave; install it with `apt-get install octave` "
            "(or point the environment variable DPTAUCC_OCTAVE at octave-cli)."
        )
    return path


def _octave_str(path: str | Path) -> str:
    """A path as an Octave single-quoted string literal."""
    return "'" + str(path).replace("'", "''") + "'"


class OctaveSession:
    """A running Octave serving ``dphd_main.m`` (see the module docstring).

    >>> from dptaucc.baselines.dphd.testing import have_octave
    >>> if have_octave():
    ...     octave = OctaveSession(find_octave())
    ...     running = octave.alive()
    ...     octave.close()
    ...     states = (running, octave.alive())
    ... else:
    ...     states = (True, False)
    >>> states
    (True, False)
    """

    def __init__(self, executable: str, start_timeout: float = START_TIMEOUT):
        self.executable = executable
        self.pid = os.getpid()  # the Python process that owns it
        self.cached: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._buffer = bytearray()
        self._rfd = self._wfd = -1
        self._broken = False
        self._ready = False
        self.dir = Path(tempfile.mkdtemp(prefix="dptaucc-octave-"))
        req, resp = self.dir / "requests", self.dir / "answers"
        os.mkfifo(req, 0o600)
        os.mkfifo(resp, 0o600)
        self.log_path = self.dir / "octave.log"
        # O_APPEND, so the log can be truncated while Octave writes to it
        with open(self.log_path, "ab") as log:
            script = (f"addpath({_octave_str(M_FILES_DIR)}); "
                      f"dphd_main({_octave_str(req)}, {_octave_str(resp)});")
            threads = str(OCTAVE_THREADS)
            self.process = subprocess.Popen(
                [executable, "--norc", "--quiet", "--no-history", "--no-window-system",
                 "--eval", script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                start_new_session=True,
                env=dict(os.environ, OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads))
        deadline = time.monotonic() + start_timeout
        try:
            self._rfd = os.open(resp, os.O_RDONLY | os.O_NONBLOCK)
            self._wfd = self._open_writer(req, deadline)
            for fd in (self._rfd, self._wfd):
                _widen_pipe(fd)
            hello = self._receive(deadline)
            if not (isinstance(hello, dict) and hello.get("op") == "ready"):
                raise OctaveError(f"Octave answered {hello!r} instead of 'ready'")
            self._ready = True
        except BaseException:
            self.kill()
            raise

    # -- state ----------------------------------------------------------------------------
    def alive(self) -> bool:
        return not self._broken and self.process.poll() is None

    def kill(self) -> None:
        """Stop the process now (SIGKILL to its process group) and remove its directory."""
        self._broken = True
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot stop
                pass
        self._close_fds()
        shutil.rmtree(self.dir, ignore_errors=True)

    def close(self, wait: float = 5.0) -> None:
        """Ask Octave to quit, kill it if it does not within ``wait`` s, clean up."""
        if self.alive():
            try:
                self.request({"cmd": "quit"}, deadline=time.monotonic() + wait)
                self.process.wait(timeout=wait)
            except (OctaveError, OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def forget(self) -> None:
        """In a forked child: drop the inherited pipe ends, leave the parent's Octave alone."""
        self._broken = True
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._rfd, self._wfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._rfd = self._wfd = -1

    def log_tail(self, chars: int = 2000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-chars:].strip()

    # -- low-level I/O --------------------------------------------------------------------
    def _open_writer(self, path: Path, deadline: float) -> int:
        """Open the request pipe once Octave holds its read end (polling, never blocking)."""
        while True:
            try:
                return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
            self._check_running()
            if time.monotonic() > deadline:
                raise self._timeout("start-up")
            time.sleep(0.005)

    def _check_running(self) -> None:
        if self.process.poll() is not None:
            raise self._died()

    def _died(self) -> OctaveDiedError:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.log_tail()
        self.kill()
        how = ("was killed by signal " + signal.Signals(-code).name if code is not None
               and code < 0 else f"exited with code {code}" if code is not None
               else "closed its pipes")
        return OctaveDiedError(
            f"the Octave process serving DPHD {how}; a new one starts at the next call"
            + (f". Octave's last output:\n{tail}" if tail else ""))

    def _timeout(self, what: str) -> OctaveTimeoutError:
        tail = self.log_tail()
        self.kill()
        return OctaveTimeoutError(
            f"Octave did not finish its {what} in time; the process was killed and a new one "
            "starts at the next call" + (f". Octave's last output:\n{tail}" if tail else ""))

    def _wait(self, fd: int, write: bool, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout("call" if self._ready else "start-up")
        # wake up at least every second to notice a dead process
        r, w, _ = select.select([] if write else [fd], [fd] if write else [], [],
                                min(remaining, 1.0))
        if not (r or w):
            self._check_running()

    def _send(self, value, deadline: float) -> None:
        chunks = protocol.encode(value)
        if sum(len(memoryview(c).cast("B")) for c in chunks) <= 1 << 16:
            chunks = [b"".join(chunks)]  # one write (one wake-up of Octave) for small messages
        for chunk in chunks:
            view = memoryview(chunk).cast("B")
            while view:
                try:
                    sent = os.write(self._wfd, view[:1 << 20])
                except BlockingIOError:
                    self._wait(self._wfd, True, deadline)
                    continue
                except BrokenPipeError:
                    raise self._died() from None
                view = view[sent:]

    def _read_exact(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            try:
                chunk = os.read(self._rfd, max(count - len(self._buffer), 1 << 16))
            except BlockingIOError:
                self._wait(self._rfd, False, deadline)
                continue
            if not chunk:  # end of file: Octave closed its answer pipe
                raise self._died()
            self._buffer += chunk
        out = bytes(self._buffer[:count])
        del self._buffer[:count]
        return out

    def _receive(self, deadline: float):
        """One framed message from Octave: its length, then the value."""
        (length,) = struct.unpack("<q", self._read_exact(8, deadline))
        return protocol.decode(self._read_exact(length, deadline))

    # -- requests -------------------------------------------------------------------------
    def request(self, message: dict, handler: Handler | None = None,
                deadline: float | None = None):
        """Send ``message``; serve Octave's mechanism requests with ``handler`` until the
        answer comes; return its ``result`` (None for a plain 'ok').

        An error inside Octave raises :class:`OctaveError` (the process stays usable); an
        exception of ``handler`` (any ``BaseException``: the audit stops a replayed fit with
        one) stops Octave's work and is raised here once Octave has abandoned the fit, within
        :data:`STOP_TIMEOUT` s (else Octave is killed, with a warning, and it is raised all
        the same): the process stays usable for the next fit.
        """
        if not self.alive():
            raise self._died()
        deadline = time.monotonic() + DEFAULT_TIMEOUT if deadline is None else deadline
        try:
            answer, pending = self._exchange(message, handler, deadline)
        except OctaveError as exc:
            stopped = getattr(exc, "stopped_by", None)
            if stopped is None:
                raise
            warnings.warn(f"Octave did not abandon the stopped fit within {STOP_TIMEOUT:g} s "
                          f"and was killed ({exc})", RuntimeWarning, stacklevel=2)
            raise stopped from None
        except BaseException:
            # interrupted half-way (KeyboardInterrupt, bytes out of step): unusable channel
            self.kill()
            raise
        if pending is not None:
            raise pending
        if answer["op"] == "error":
            raise OctaveError(f"DPHD-OCTAVE-ERROR: {answer.get('message', '')}"
                              f"{answer.get('stack', '')}")
        return answer.get("result")

    def _exchange(self, message: dict, handler, deadline: float):
        self._send(message, deadline)
        pending: BaseException | None = None
        while True:
            try:
                answer = self._receive(deadline)
            except OctaveTimeoutError as exc:
                if isinstance(pending, Exception) or pending is None:
                    raise
                exc.stopped_by = pending  # Octave did not abandon a fit Python stopped
                raise
            op = answer.get("op") if isinstance(answer, dict) else None
            if op in ("done", "ok", "error"):
                return answer, pending
            if op not in _MECHANISM_OPS:
                raise protocol.ProtocolError(f"unexpected answer from Octave: {answer!r:.200}")
            # the answer to a mechanism call: the release (int64 array), or a text that
            # makes Octave stop (dphd_mechanism.m)
            if pending is not None or handler is None:
                reply = "no handler for mechanism calls" if handler is None else "stopping"
            else:
                try:
                    reply = np.asarray(handler(answer), dtype=np.int64)
                except BaseException as exc:  # stop Octave's work, raise once it answers
                    pending = exc
                    reply = f"{type(exc).__name__}: {exc}"
                    if not isinstance(exc, Exception):  # a stop: wait a bounded time only
                        deadline = min(deadline, time.monotonic() + STOP_TIMEOUT)
            self._send(reply, deadline)

    def ensure_matrix(self, key: str, build: Callable[[], np.ndarray | sp.spmatrix],
                      deadline: float) -> None:
        """Make Octave hold the matrix ``build()`` under ``key`` (built and sent only if it
        does not already), then drop the least recently used beyond the cache limits."""
        if key in self.cached:
            self.cached.move_to_end(key)
            return
        matrix = build()
        self.request({"cmd": "put", "key": key, "Xt": matrix, "integral": _integral(matrix)},
                     deadline=deadline)
        self.cached[key] = _octave_bytes(matrix)
        while len(self.cached) > 1 and (len(self.cached) > MAX_CACHED_MATRICES
                                        or sum(self.cached.values()) > MAX_CACHED_BYTES):
            old, _ = self.cached.popitem(last=False)
            self.request({"cmd": "drop", "key": old}, deadline=deadline)

    def truncate_log(self) -> None:
        try:
            os.truncate(self.log_path, 0)
        except OSError:
            pass


def _widen_pipe(fd: int) -> None:
    """Let the pipe hold PIPE_BYTES, where the system allows it (Linux; else unchanged)."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):
        pass


def _integral(matrix) -> bool:
    """Are all entries whole numbers? One compiled pass (Octave's own takes ~4x longer)."""
    values = matrix.data if sp.issparse(matrix) else matrix.ravel(order="K")
    return value_summary(values)[1]


def _octave_bytes(matrix) -> int:
    """Approximate memory Octave needs for a matrix (sparse: values, row indices, pointers)."""
    if sp.issparse(matrix):
        return 16 * matrix.nnz + 8 * (matrix.shape[1] + 1)
    return 8 * int(np.prod(matrix.shape))


# -- the process-wide session -------------------------------------------------------------
_LOCK = threading.RLock()
_SESSION: OctaveSession | None = None


def session(executable: str | None = None,
            start_timeout: float = START_TIMEOUT) -> OctaveSession:
    """This process's Octave, started (or restarted after it died) as needed.

    >>> from dptaucc.baselines.dphd.testing import have_octave
    >>> if have_octave():
    ...     first = session()
    ...     first.kill()  # a dead session is replaced by a new one
    ...     restarted = session() is not first and session() is session()
    ...     shutdown()
    ... else:
    ...     restarted = True
    >>> restarted
    True
    """
    global _SESSION
    path = find_octave(executable)
    with _LOCK:
        current = _SESSION
        if current is None or not current.alive() or current.executable != path:
            if current is not None:
                current.kill()
            _SESSION = None
            _SESSION = OctaveSession(path, start_timeout)
        return _SESSION


def shutdown() -> None:
    """Stop this process's Octave, if any (registered to run at interpreter exit).

    >>> from dptaucc.baselines.dphd.testing import have_octave
    >>> if have_octave():
    ...     running = session()
    ...     shutdown()
    ...     stopped = not running.alive()
    ... else:
    ...     stopped = True
    >>> stopped, shutdown()  # a second call does nothing
    (True, None)
    """
    global _SESSION
    with _LOCK:
        current, _SESSION = _SESSION, None
        if current is not None and current.pid == os.getpid():
            current.close()


def _after_fork_in_child() -> None:
    global _SESSION, _LOCK
    _LOCK = threading.RLock()
    if _SESSION is not None:
        _SESSION.forget()
    _SESSION = None


atexit.register(shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _deadline(timeout: float | None) -> float:
    return time.monotonic() + (timeout if timeout is not None else math.inf)


def _ready_session(deadline: float) -> OctaveSession:
    """The session, started within the call's deadline if need be, its log emptied."""
    sess = session(start_timeout=min(START_TIMEOUT, deadline - time.monotonic()))
    sess.truncate_log()
    return sess


def run_fit(key: str, build: Callable[[], np.ndarray | sp.spmatrix], params: dict,
            handler: Handler | None, timeout: float | None = DEFAULT_TIMEOUT):
    """Fit DPHD in Octave on the matrix cached under ``key`` (``build()`` gives it, d × n,
    if Octave does not hold it): ``dphd_fit`` with ``params`` (names as ``dphd_main.m``
    reads them), mechanism calls served by ``handler``. Returns Octave's result struct.

    The estimator :class:`dptaucc.baselines.dphd.DPHD` is the caller (a full fit, so no
    example here runs it alone); :func:`dptaucc.baselines.dphd.testing.traced_fits` wraps it:

    >>> from dptaucc.baselines.dphd import octave, testing
    >>> with testing.traced_fits() as traces:
    ...     wrapped = octave.run_fit is not run_fit
    >>> wrapped, octave.run_fit is run_fit, traces
    (True, True, [])
    """
    deadline = _deadline(timeout)
    with _LOCK:
        sess = _ready_session(deadline)
        sess.ensure_matrix(key, build, deadline)
        return sess.request({"cmd": "fit", "key": key, "params": params}, handler, deadline)


def call(function: str, *args, nargout: int = 1, handler: Handler | None = None,
         timeout: float | None = DEFAULT_TIMEOUT) -> list:
    """Run the Octave function ``function(*args)`` in the session and return its ``nargout``
    outputs (tests use it on single DPHD steps; mechanism calls go to ``handler``).

    >>> import numpy as np
    >>> from dptaucc.baselines.dphd.testing import have_octave
    >>> if have_octave():
    ...     value, index = call("max", np.array([[3.0, 7.0, 5.0]]), nargout=2)
    ...     answer = (float(value[0, 0]), float(index[0, 0]))
    ... else:
    ...     answer = (7.0, 2.0)
    >>> answer  # Octave counts from 1
    (7.0, 2.0)
    """
    deadline = _deadline(timeout)
    with _LOCK:
        sess = _ready_session(deadline)
        return sess.request({"cmd": "call", "fn": function, "args": list(args),
                             "nargout": nargout}, handler, deadline)
