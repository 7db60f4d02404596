"""The masked secure sum of Honda et al. (2015) §5.2, Figure 2, in fixed-point arithmetic.

Protocol (Honda et al. 2015, §5), for T >= 3 sites each holding a private array
x_t of the same shape:

1. the mask dealer s₁ draws masks E_1..E_T, uniform on Z_{2^64}, with Σ_t E_t ≡ 0 (mod 2^64),
   and sends E_t to every other site t;
2. every site sends its share enc(x_t) + E_t (mod 2^64) to the aggregator s₂ (≠ s₁);
3. s₂ adds the shares: the masks cancel exactly and it decodes Σ_t x_t.

Values are encoded as fixed-point integers (``fractional_bits`` binary digits after the point,
two's complement in 64 bits). A uniform mask makes each share uniform whatever the value
(perfect hiding, semi-honest s₁ and s₂ that do not collude), and the modular sum is exact.
With T = 2 the aggregator would learn the other site's value from the total, hence T >= 3.
"""

from __future__ import annotations

import numpy as np

from .messages import MessageLog

__all__ = ["encode_fixed", "decode_fixed", "draw_zero_sum_masks", "masked_secure_sum"]

_U64_MAX = np.iinfo(np.uint64).max


def encode_fixed(x: np.ndarray, fractional_bits: int, headroom: int = 1) -> np.ndarray:
    """Fixed-point code of ``x`` in Z_{2^64} (uint64, two's complement).

    ``headroom`` is the number of such values that will be added: the encoding refuses values
    whose sum could leave the signed 64-bit range.

    >>> import numpy as np
    >>> code = encode_fixed(np.array([1.5, -0.25]), fractional_bits=8)
    >>> code.dtype, decode_fixed(code, 8).tolist()  # −0.25: two's complement
    (dtype('uint64'), [1.5, -0.25])
    >>> encode_fixed(np.array([2.0**60]), fractional_bits=8)
    Traceback (most recent call last):
    ...
    ValueError: secure sum: |value| = 1.153e+18 overflows the fixed-point range ...
    """
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("secure sum: value to encode is not finite")
    limit = 2.0 ** (62 - fractional_bits) / max(1, headroom)
    if x.size and float(np.max(np.abs(x))) >= limit:
        raise ValueError(
            f"secure sum: |value| = {float(np.max(np.abs(x))):.4g} overflows the fixed-point "
            f"range ±{limit:.4g} (fractional_bits={fractional_bits}, {headroom} summands); "
            "use fewer fractional bits or row-normalised data")
    return np.rint(np.ldexp(x, fractional_bits)).astype(np.int64).view(np.uint64)


def decode_fixed(code: np.ndarray, fractional_bits: int) -> np.ndarray:
    """Inverse of :func:`encode_fixed` (up to the rounding of the encoding).

    >>> import numpy as np
    >>> x = np.array([0.1, -3.7, 1e6])
    >>> bool(np.abs(decode_fixed(encode_fixed(x, 20), 20) - x).max() <= 2.0**-21)
    True
    """
    return np.ldexp(np.asarray(code, dtype=np.uint64).view(np.int64).astype(np.float64),
                    -fractional_bits)


def draw_zero_sum_masks(rng: np.random.Generator, n_parties: int, shape) -> list[np.ndarray]:
    """``n_parties`` uniform uint64 arrays summing to 0 modulo 2^64 (any n-1 are independent).

    >>> import numpy as np
    >>> masks = draw_zero_sum_masks(np.random.default_rng(0), 4, (2, 3))
    >>> total = np.zeros((2, 3), dtype=np.uint64)
    >>> for mask in masks:
    ...     total += mask  # wraps modulo 2^64
    >>> len(masks), total.tolist()
    (4, [[0, 0, 0], [0, 0, 0]])
    """
    masks = [rng.integers(0, _U64_MAX, size=shape, dtype=np.uint64, endpoint=True)
             for _ in range(n_parties - 1)]
    total = np.zeros(shape, dtype=np.uint64)
    for e in masks:
        total += e  # wraps modulo 2^64
    masks.append(np.zeros(shape, dtype=np.uint64) - total)
    return masks


def masked_secure_sum(values: dict[str, np.ndarray], dealer: str, aggregator: str,
                      rng: np.random.Generator, log: MessageLog, round_: int, kind: str,
                      fractional_bits: int) -> np.ndarray:
    """Run the protocol once; returns Σ_t values[t] as decoded at the aggregator.

    ``values`` maps each site name to the array it keeps private; only masks and masked shares
    are sent (recorded in ``log`` as ``"<kind>:mask"`` and ``"<kind>:share"`` messages).

    >>> import numpy as np
    >>> log = MessageLog()
    >>> values = {"a": np.array([1.25]), "b": np.array([2.5]), "c": np.array([-0.75])}
    >>> masked_secure_sum(values, "a", "b", np.random.default_rng(0), log, 1, "A", 16).tolist()
    [3.0]
    >>> sorted((m.sender, m.receiver, m.kind) for m in log)  # no value is sent in the clear
    [('a', 'b', 'A:mask'), ('a', 'b', 'A:share'), ('a', 'c', 'A:mask'), ('c', 'b', 'A:share')]
    """
    names = list(values)
    if len(names) < 3:
        raise ValueError(f"the masked secure sum needs at least 3 sites, got {len(names)}")
    if dealer == aggregator or dealer not in values or aggregator not in values:
        raise ValueError("dealer and aggregator must be two different sites")
    shape = np.shape(values[names[0]])
    # 1. the dealer draws the masks and sends each site its own
    masks = dict(zip(names, draw_zero_sum_masks(rng, len(names), shape), strict=True))
    received_mask = {t: (masks[t] if t == dealer else
                         log.send(round_, dealer, t, f"{kind}:mask", masks[t])) for t in names}
    # 2. every site masks its encoded value and sends the share to the aggregator
    total = np.zeros(shape, dtype=np.uint64)
    for t in names:
        share = encode_fixed(values[t], fractional_bits, headroom=len(names)) + received_mask[t]
        if t != aggregator:
            share = log.send(round_, t, aggregator, f"{kind}:share", share)
        total += share  # 3. the aggregator adds the shares modulo 2^64
    return decode_fixed(total, fractional_bits)
