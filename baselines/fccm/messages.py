"""The message log of the simulated sites: every value that crosses a site boundary.

Sites run in one process, but they only exchange data through :meth:`MessageLog.send`, which
records the message and hands the receiver a *copy* of the payload (never a view of the
sender's memory). The log therefore is the complete transcript of the protocol and can be
audited: which party sent what kind of value, of which shape, to whom, in which round.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Message", "MessageLog"]


def _digest(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()[:16]


@dataclass(frozen=True)
class Message:
    """One transmitted value. ``payload`` is kept only when the log stores payloads.

    >>> import numpy as np
    >>> log = MessageLog()
    >>> _ = log.send(1, "site 1", "aggregator", "share", np.zeros((2, 3)))
    >>> message = log[0]
    >>> message.shape, message.nbytes, message.payload is None, sorted(message.summary())[:3]
    ((2, 3), 48, True, ['digest', 'dtype', 'kind'])
    """

    round: int  # protocol round: 0 = set-up, r >= 1 = iteration r, then the final rounds
    sender: str
    receiver: str
    kind: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    digest: str  # first 16 hex digits of the SHA-256 of the payload bytes
    payload: np.ndarray | None = None

    def summary(self) -> dict:
        """The message without its payload (what ``message_log_`` tables show)."""
        return {"round": self.round, "sender": self.sender, "receiver": self.receiver,
                "kind": self.kind, "shape": self.shape, "dtype": self.dtype,
                "nbytes": self.nbytes, "digest": self.digest}


@dataclass
class MessageLog:
    """Transcript of a simulated protocol run.

    ``store_payloads=True`` keeps a read-only copy of every payload (for audits and tests; it
    costs memory proportional to the traffic). Otherwise only shape, dtype and digest are kept.

    >>> import numpy as np
    >>> log = MessageLog(store_payloads=True)
    >>> sent = np.array([1.0, 2.0])
    >>> received = log.send(1, "a", "b", "U", sent)
    >>> sent[0] = 99.0  # the receiver holds a copy, the log a read-only one
    >>> received.tolist(), log[0].payload.tolist(), log[0].payload.flags.writeable
    ([1.0, 2.0], [1.0, 2.0], False)
    >>> log.kinds(), len(log)
    (Counter({'U': 1}), 1)
    >>> log.send(1, "a", "a", "U", sent)
    Traceback (most recent call last):
    ...
    ValueError: a party does not send messages to itself ('a')
    """

    store_payloads: bool = False
    messages: list[Message] = field(default_factory=list)

    def send(self, round_: int, sender: str, receiver: str, kind: str, payload) -> np.ndarray:
        """Record one message and return the receiver's private copy of the payload."""
        if sender == receiver:
            raise ValueError(f"a party does not send messages to itself ({sender!r})")
        arr = np.array(payload, copy=True)
        kept = None
        if self.store_payloads:
            kept = arr.copy()
            kept.setflags(write=False)
        self.messages.append(Message(int(round_), sender, receiver, kind, tuple(arr.shape),
                                     str(arr.dtype), int(arr.nbytes), _digest(arr), kept))
        return arr

    def kinds(self) -> Counter:
        return Counter(m.kind for m in self.messages)

    def to_records(self) -> list[dict]:
        return [m.summary() for m in self.messages]

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self):
        return iter(self.messages)

    def __getitem__(self, i):
        return self.messages[i]
