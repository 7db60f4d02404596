"""The wire format between Python and the Octave process: typed values as little-endian bytes.

One message is one value, usually a struct. Every value starts with a one-byte tag:

==== ======================================================================================
tag  payload
==== ======================================================================================
d    double array: ndims (int64), the dims (int64 each), the entries (float64, column-major)
i    int64 array, laid out like ``d`` (Octave reads it as doubles: values beyond 2^53 refused)
c    text: byte length (int64), UTF-8 bytes
l    list (an Octave cell row): count (int64), then each value
s    struct: field count (int64), then per field its name (length + bytes) and its value
p    sparse double matrix (CSC): rows, cols, nnz (int64), column pointers (cols + 1, int64),
     0-based row indices (nnz, int64), values (nnz, float64)
==== ======================================================================================

The Octave side (``dphd_read.m``, ``dphd_encode.m``) speaks the same format. Arrays always
travel with at least two dims, as Octave holds them; Python scalars become 1×1 arrays.
Octave's messages are framed: an int64 byte length, then the value, so Python reads each one
whole and parses it in memory.
"""

from __future__ import annotations

import math
import numbers
import struct
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

__all__ = ["encode", "decode", "ProtocolError", "MAX_EXACT_INT"]

#: the largest integer a double holds exactly; int64 arrays beyond it are refused
MAX_EXACT_INT = 2**53

_I64 = np.dtype("<i8")
_INT = struct.Struct("<q")
_F64 = np.dtype("<f8")


class ProtocolError(ValueError):
    """A value that cannot travel (an unsupported type), or bytes that do not decode.

    >>> issubclass(ProtocolError, ValueError)
    True
    >>> encode(object())
    Traceback (most recent call last):
    ...
    dptaucc.baselines.dphd.protocol.ProtocolError: cannot send a value of type object to Octave
    """


def _int64s(*values: int) -> bytes:
    return np.asarray(values, dtype=_I64).tobytes()


def _text(s: str) -> bytes:
    raw = s.encode("utf-8")
    return _int64s(len(raw)) + raw


def _array(tag: bytes, arr: np.ndarray, dtype: np.dtype) -> list:
    if arr.ndim < 2:
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr.reshape(1, 1)
    flat = np.asarray(arr, dtype=dtype).ravel(order="F")  # a view when already column-major
    return [tag, _int64s(arr.ndim, *arr.shape), memoryview(flat).cast("B")]


def encode(value) -> list:
    """The byte chunks (bytes or memoryviews) of one value, to write one after the other.

    >>> import numpy as np
    >>> chunks = encode({"cmd": "fit", "y": 2.5})
    >>> bytes(chunks[0]), decode(b"".join(bytes(c) for c in chunks))  # a scalar arrives 1×1
    (b's', {'cmd': 'fit', 'y': array([[2.5]])})
    >>> encode(np.array([2**60]))
    Traceback (most recent call last):
    ...
    dptaucc.baselines.dphd.protocol.ProtocolError: an integer array beyond 2^53 ...
    """
    if isinstance(value, str):
        return [b"c", _text(value)]
    if isinstance(value, Mapping):
        out = [b"s", _int64s(len(value))]
        for name, item in value.items():
            out.append(_text(str(name)))
            out.extend(encode(item))
        return out
    if sp.issparse(value):
        csc = sp.csc_matrix(value, dtype=np.float64)
        csc.sum_duplicates()
        rows, cols = csc.shape
        return [b"p", _int64s(rows, cols, csc.nnz), csc.indptr.astype(_I64).tobytes(),
                csc.indices.astype(_I64).tobytes(), csc.data.astype(_F64).tobytes()]
    if isinstance(value, (list, tuple)):
        out = [b"l", _int64s(len(value))]
        for item in value:
            out.extend(encode(item))
        return out
    if isinstance(value, (bool, np.bool_, numbers.Real)):
        return _array(b"d", np.asarray(float(value)), _F64)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iu":
            if value.size and np.abs(value).max() > MAX_EXACT_INT:
                raise ProtocolError("an integer array beyond 2^53 cannot reach Octave exactly")
            return _array(b"i", value, _I64)
        if value.dtype.kind in "fb":
            return _array(b"d", value, _F64)
    raise ProtocolError(f"cannot send a value of type {type(value).__name__} to Octave")


def decode(message: bytes | bytearray | memoryview):
    """The value a whole message holds (Octave's answers arrive framed by their length).

    >>> import numpy as np, scipy.sparse as sp
    >>> value = ["a", np.array([[1, 2]]), sp.identity(3, format="csr")]
    >>> text, ints, matrix = decode(b"".join(bytes(c) for c in encode(value)))
    >>> text, ints.tolist(), ints.dtype, matrix.format, matrix.nnz
    ('a', [[1, 2]], dtype('int64'), 'csc', 3)
    """
    reader = _Reader(memoryview(message).cast("B"))
    value = reader.value()
    if reader.pos != len(reader.buf):
        raise ProtocolError(f"{len(reader.buf) - reader.pos} bytes left after a message "
                            "(the channel is out of step)")
    return value


class _Reader:
    """Parses values from an in-memory message (offsets, no copies of large arrays)."""

    def __init__(self, buf: memoryview):
        self.buf = buf
        self.pos = 0

    def _take(self, count: int) -> memoryview:
        end = self.pos + count
        if end > len(self.buf):
            raise ProtocolError("a message ended in the middle of a value")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def _int(self) -> int:
        return _INT.unpack(self._take(8))[0]

    def _text(self) -> str:
        return bytes(self._take(self._int())).decode("utf-8")

    def value(self):
        tag = bytes(self._take(1))
        if tag in (b"d", b"i"):
            ndim = self._int()
            dims = struct.unpack(f"<{ndim}q", self._take(8 * ndim))
            dtype = _F64 if tag == b"d" else _I64
            count = math.prod(dims)
            data = np.frombuffer(self._take(8 * count), dtype) if count else np.empty(0, dtype)
            return data.reshape(dims, order="F")
        if tag == b"c":
            return self._text()
        if tag == b"l":
            return [self.value() for _ in range(self._int())]
        if tag == b"s":
            out = {}
            for _ in range(self._int()):
                name = self._text()
                out[name] = self.value()
            return out
        if tag == b"p":
            rows, cols, nnz = struct.unpack("<3q", self._take(24))
            indptr = np.frombuffer(self._take(8 * (cols + 1)), _I64)
            indices = np.frombuffer(self._take(8 * nnz), _I64) if nnz else np.empty(0, _I64)
            data = np.frombuffer(self._take(8 * nnz), _F64) if nnz else np.empty(0, _F64)
            return sp.csc_matrix((data, indices, indptr), shape=(rows, cols))
        raise ProtocolError(f"unknown value tag {tag!r} (the channel is out of step)")

