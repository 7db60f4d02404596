"""A small digitiser of matplotlib figures: numbers read back off a raster image of a plot.

It reads what the default matplotlib style draws (the authors' published figures are made that
way): an axes frame of four black spines with outward tick marks, tick labels in DejaVu Sans,
lines in named colours over translucent ``fill_between`` bands, ``pcolormesh`` heatmaps with a
colour bar. Every step measures the image; nothing is typed in but what the plotting code says
(the series' colours, the x values of the points, the axis limits set by hand):

* :func:`find_frames`: the axes frames (long runs of black pixels forming a rectangle);
* :func:`find_ticks`: the tick marks outside one side of a frame, their centres to the sub-pixel;
* :func:`read_tick_labels`: the tick labels, glyph by glyph, against DejaVu Sans glyphs rendered
  by matplotlib's own font engine (digits, point, minus), checked to be evenly spaced values;
* :class:`Axis`: the pixel -> data map fitted to the ticks (linear or log10), with the fit's
  residual as its calibration error;
* :func:`trace_line`: the y of a polyline of one colour at given x (each vertex from straight-line
  fits of the segments on both sides, so occlusion, dashes and corners do not bias it);
* :func:`band_coverage` / :func:`band_edges`: which translucent bands cover each pixel (every
  combination of the bands' composited colours is matched) and the band's extent at each x;
* :func:`legend_box`: the legend (its edges, drawn at 80 % opacity over anything), left out;
* :func:`read_heatmap`: each cell's colour as an entry of the named colour map, placed between
  the colour bar's ends (read by the bar's own ticks);
* :func:`read_line_plot` / :func:`read_heatmap_plot`: a whole plot of the notebooks' kind.

Tick marks are snapped to whole pixels when drawn, lines are not: the x calibration is shifted
by where the lines' sharp corners actually meet (:func:`corner_offsets`). Every value comes with
a reading error in data units, a bound: for a line vertex a pixel, plus the disagreement of its
two sides, the fits' residual and the x calibration's error along the slope, plus the y
calibration's error; for a heatmap cell half a colour level plus the colour bar's calibration.
The tests (tests/bench/test_digitise.py) draw plots the authors' way with known numbers and
check that the stated error covers the measured one.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

__all__ = ["Frame", "Axis", "Series", "Tick", "DigitiseError", "read_rgb", "find_frames",
           "find_ticks", "read_tick_labels", "axis_from_ticks", "line_mask", "legend_box",
           "trace_line", "segment_fits", "corner_offsets", "hidden", "band_coverage",
           "band_edges", "read_heatmap", "read_line_plot", "read_heatmap_plot"]


class DigitiseError(ValueError):
    """The image does not show what the reader expected (no frame, unreadable ticks, ...)."""


# ---------------------------------------------------------------- image
def read_rgb(source: str | Path | bytes) -> np.ndarray:
    """An image as float RGB in [0, 1], transparency composited over white (H x W x 3)."""
    from PIL import Image

    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    rgba = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"), dtype=float) / 255.0
    alpha = rgba[..., 3:]
    return rgba[..., :3] * alpha + (1.0 - alpha)


_last: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _per_image(name: str, img: np.ndarray, compute) -> np.ndarray:
    """``compute(img)``, kept for the last image seen (every step reads the same image)."""
    hit = _last.get(name)
    if hit is None or hit[0] is not img:
        _last[name] = (img, compute(img))
    return _last[name][1]


def _black(img: np.ndarray, level: float = 0.3) -> np.ndarray:
    """Near-black, near-grey pixels (spines, ticks, text): max channel < level, little colour."""
    neutral = _per_image("neutral", img, lambda a: np.ptp(a, axis=2) < 0.15)
    brightest = _per_image("max", img, lambda a: a.max(axis=2))
    return (brightest < level) & neutral


def _ink(img: np.ndarray) -> np.ndarray:
    """Darkness of neutral pixels in [0, 1] (0 for coloured ones), for sub-pixel centroids."""
    return _per_image("ink", img, lambda a: np.where(np.ptp(a, axis=2) < 0.15,
                                                      1.0 - a.mean(axis=2), 0.0))


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) of every run of True in a 1-D mask."""
    m = np.concatenate([[False], np.asarray(mask, bool), [False]])
    d = np.flatnonzero(np.diff(m.astype(np.int8)))
    return list(zip(d[::2].tolist(), d[1::2].tolist(), strict=True))


# ---------------------------------------------------------------- frames
@dataclass(frozen=True)
class Frame:
    """An axes frame: the pixel rows/columns its spines cover (inclusive) and their centres."""

    top: tuple[int, int]
    bottom: tuple[int, int]
    left: tuple[int, int]
    right: tuple[int, int]

    @property
    def inner(self) -> tuple[int, int, int, int]:
        """(row0, row1, col0, col1) of the interior, spines excluded (inclusive bounds)."""
        return self.top[1] + 1, self.bottom[0] - 1, self.left[1] + 1, self.right[0] - 1

    @property
    def width(self) -> int:
        return self.right[0] - self.left[1]

    @property
    def height(self) -> int:
        return self.bottom[0] - self.top[1]


def _lines(black: np.ndarray, min_len: int) -> list[tuple[int, int, int, int]]:
    """Horizontal black lines: (row0, row1, col0, col1) of bundles of adjacent rows that hold a
    run of at least ``min_len`` pixels over the same columns (±2)."""
    segs = []
    for r in range(black.shape[0]):
        segs += [(r, a, b) for a, b in _runs(black[r]) if b - a >= min_len]
    lines: list[list[int]] = []
    for r, a, b in segs:
        for ln in lines:
            if ln[1] == r - 1 and abs(ln[2] - a) <= 2 and abs(ln[3] - b) <= 2:
                ln[1] = r
                ln[2], ln[3] = min(ln[2], a), max(ln[3], b)
                break
        else:
            lines.append([r, r, a, b])
    return [tuple(ln) for ln in lines]


def find_frames(img: np.ndarray, min_size: int = 40) -> list[Frame]:
    """Every axes frame of the image (largest first): two horizontal and two vertical black
    lines meeting at the corners, ``min_size`` px tall at least (a colour bar can be narrow:
    its width may be a third of that)."""
    black = _black(img)
    hl = _lines(black, max(8, min_size // 3))
    vl = _lines(black.T, min_size)  # (col0, col1, row0, row1)
    slack = 3 + max(img.shape) // 60  # a tick mark on a corner lengthens a spine's run

    def spans(line, lo, hi):  # a spine runs from about lo to about hi (a corner tick beyond)
        return lo - slack <= line[2] <= lo + 3 and hi - 3 <= line[3] <= hi + slack

    frames = []
    for i, left in enumerate(vl):
        for right in vl[i + 1:]:
            if right[0] <= left[1] + min_size // 6:
                continue
            tops = [h for h in hl if spans(h, left[0], right[1])
                    and abs(h[0] - max(left[2], right[2])) <= slack]
            for t in tops:
                bots = [h for h in hl if h[0] > t[1] + min_size // 2
                        and spans(h, left[0], right[1])
                        and spans(left, t[0], h[1]) and spans(right, t[0], h[1])]
                for b in bots[:1]:
                    frames.append(Frame((t[0], t[1]), (b[0], b[1]), (left[0], left[1]),
                                        (right[0], right[1])))
    if not frames:
        raise DigitiseError("no axes frame found (four black spines)")
    return sorted(frames, key=lambda f: -f.width * f.height)


# ---------------------------------------------------------------- ticks
@dataclass(frozen=True)
class Tick:
    """A tick mark: its centre across the axis (sub-pixel), its length and its far end."""

    pos: float
    length: int
    end: int


def find_ticks(img: np.ndarray, frame: Frame, side: str, major_only: bool = True) -> list[Tick]:
    """Tick marks drawn outward on ``side`` ("left", "right", "bottom", "top") of a frame,
    ordered by position; with ``major_only`` the shorter (minor) ticks are dropped."""
    black = _black(img, 0.5)
    ink = _ink(img)
    r0, r1, c0, c1 = frame.inner
    if side in ("left", "right"):
        start = frame.left[0] - 1 if side == "left" else frame.right[1] + 1
        step = -1 if side == "left" else 1
        lo = frame.top[0] - 2  # ticks on the corners too
        along = black[lo:frame.bottom[1] + 3, start]
        found = []
        for a, b in _runs(along):
            rows = slice(lo + a, lo + b)
            length, col = 0, start
            while 0 <= col < img.shape[1] and black[rows, col].any():
                length, col = length + 1, col + step
            w = ink[rows, start].copy()
            pos = float((np.arange(lo + a, lo + b) * w).sum() / max(w.sum(), 1e-9))
            found.append(Tick(pos, length, col - step))
    else:
        start = frame.bottom[1] + 1 if side == "bottom" else frame.top[0] - 1
        step = 1 if side == "bottom" else -1
        along = black[start, c0 - 2:c1 + 3]
        found = []
        for a, b in _runs(along):
            cols = slice(c0 - 2 + a, c0 - 2 + b)
            length, row = 0, start
            while 0 <= row < img.shape[0] and black[row, cols].any():
                length, row = length + 1, row + step
            w = ink[start, cols].copy()
            pos = float((np.arange(c0 - 2 + a, c0 - 2 + b) * w).sum() / max(w.sum(), 1e-9))
            found.append(Tick(pos, length, row - step))
    if not found:
        raise DigitiseError(f"no tick marks on the {side} of the frame")
    if major_only:
        longest = max(t.length for t in found)
        found = [t for t in found if t.length >= 0.75 * longest]
    return sorted(found, key=lambda t: t.pos)


# ---------------------------------------------------------------- tick labels
GLYPHS = "0123456789.\u2212"


@cache
def _template(ch: str) -> np.ndarray:
    """The ink of one DejaVu Sans glyph rendered large by matplotlib's font engine, cropped."""
    from matplotlib.font_manager import findfont
    from matplotlib.ft2font import FT2Font

    font = FT2Font(findfont("DejaVu Sans"))
    font.set_size(48, 100)
    font.set_text(ch)
    font.draw_glyphs_to_bitmap()
    a = np.asarray(font.get_image(), float) / 255.0
    rows, cols = np.flatnonzero(a.any(axis=1)), np.flatnonzero(a.any(axis=0))
    return a[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]


def _resize(a: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Area-average resampling of a 2-D array to ``shape`` (good enough for glyph matching)."""
    from PIL import Image

    im = Image.fromarray((a * 255).astype(np.uint8))
    return np.asarray(im.resize((shape[1], shape[0]), Image.Resampling.BOX), float) / 255.0


def _classify(glyph: np.ndarray, digit_height: int, bottom: int, baseline: int) -> str:
    """One glyph: "." and "−" by size and place, digits by the closest rendered template."""
    h, w = glyph.shape
    if h <= 0.35 * digit_height:  # a point sits on the baseline, a minus mid-height and wide
        return "\u2212" if w > 1.5 * h and bottom < baseline - 0.2 * digit_height else "."
    scores = {}
    for ch in "0123456789":
        t = _template(ch)
        aspect_t, aspect_g = t.shape[1] / t.shape[0], w / h
        scores[ch] = (np.abs(_resize(t, glyph.shape) - glyph).mean()
                      + 0.5 * abs(np.log(aspect_g / aspect_t)))
    return min(scores, key=scores.get)


def _split(ink: np.ndarray, a: int, b: int, height: int) -> list[tuple[int, int]]:
    """[a, b) cut into glyphs: a piece wider than a digit is tall holds touching glyphs (small
    sizes: a 4's bar meets the next 0), cut at its faintest column near the middle."""
    if b - a <= height:
        return [(a, b)]
    lo, hi = a + int(0.3 * (b - a)), a + int(0.7 * (b - a)) + 1
    cut = lo + int(np.argmin(ink[:, lo:hi].sum(axis=0)))
    return _split(ink, a, cut, height) + _split(ink, cut, b, height)


def read_label(img: np.ndarray, rows: slice, cols: slice) -> str:
    """The text of one tick label in a box of the image (glyphs split at blank columns, and
    touching glyphs at their faintest column)."""
    cols = slice(max(cols.start - 1, 0), cols.stop + 1)  # faint edges of the end glyphs
    ink = _ink(img)[rows, cols]
    dark = ink > 0.35
    if not dark.any():
        raise DigitiseError("no tick label in its box")
    rr = np.flatnonzero(dark.any(axis=1))
    ink, dark = ink[rr[0]:rr[-1] + 1], dark[rr[0]:rr[-1] + 1]
    height = dark.shape[0]
    pieces = [q for a, b in _runs((ink > 0.5).any(axis=0)) for q in _split(ink, a, b, height)]
    boxes = []
    for a, b in pieces:
        gr = np.flatnonzero(dark[:, a:b].any(axis=1))
        if gr.size:
            boxes.append((a, b, gr[0], gr[-1]))
    digit_height = max(r1 - r0 + 1 for _, _, r0, r1 in boxes)
    baseline = max(r1 for _, _, _, r1 in boxes)
    text = ""
    for a, b, r0, r1 in boxes:
        text += _classify(np.clip(ink[r0:r1 + 1, a:b] / 0.85, 0, 1), digit_height, r1,
                          baseline)
    return text


def _walk(dark: np.ndarray, start: int, step: int, limit: int,
          along_text: bool = True) -> list[int]:
    """Indices along axis 1 of ``dark`` (rows x positions) from ``start`` in direction ``step``
    that hold ink, up to the first blank gap wider than 0.4 x the text's height (the end of a
    text) or ``limit`` positions without any ink. ``along_text``: the walk runs along the
    text (the height is the ink's extent across); else across it (the height is the walk's
    own extent so far: a tick label under its tick, then a gap, then the axis label)."""
    seen: list[int] = []
    pos, gap = start, 0
    while 0 <= pos < dark.shape[1]:
        if dark[:, pos].any():
            seen.append(pos)
            gap = 0
        elif seen:
            gap += 1
            if along_text:
                ink_rows = np.flatnonzero(dark[:, min(seen):max(seen) + 1].any(axis=1))
                height = ink_rows.max() - ink_rows.min() + 1
            else:
                height = max(seen) - min(seen) + 1
            if gap > max(3, 0.4 * height):
                break
        elif abs(pos - start) > limit:
            break
        pos += step
    return seen


def _nearest_run(profile: np.ndarray, offset: int, pos: float, join: int) -> tuple[int, int]:
    """[start, stop) (plus ``offset``) of the run of ``profile`` nearest ``pos``, runs closer
    than ``join`` merged."""
    runs: list[list[int]] = []
    for a, b in _runs(profile):
        if runs and a - runs[-1][1] <= join:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    if not runs:
        raise DigitiseError(f"no tick label near {pos:.1f}")
    a, b = min(runs, key=lambda r: max(r[0] + offset - pos, pos - (r[1] - 1 + offset), 0))
    return a + offset, b + offset


def _label_box(img: np.ndarray, frame: Frame, side: str, tick: Tick,
               spacing: float) -> tuple[slice, slice]:
    """The box holding the label of one tick: the text beside (or below) the tick's far end
    nearest the tick, up to the first gap wider than a glyph."""
    dark = _ink(img) > 0.35
    half = max(3, int(0.45 * spacing))
    limit = int(0.3 * max(img.shape))
    if side in ("left", "right"):
        step = -1 if side == "left" else 1
        rows = slice(max(0, int(tick.pos) - half), int(tick.pos) + half + 1)
        reach = max(10, int(0.12 * img.shape[1]))  # the label's rows: the text nearest the tick
        cols = (slice(max(0, tick.end - reach), tick.end) if step < 0
                else slice(tick.end + 1, tick.end + 1 + reach))
        a, b = _nearest_run(dark[rows, cols].any(axis=1), rows.start, tick.pos, 0)
        rows = slice(a, b)
        seen = _walk(dark[rows], tick.end + step, step, limit)
        if not seen:
            raise DigitiseError(f"no label beside the tick at {tick.pos:.1f}")
        return rows, slice(min(seen), max(seen) + 1)
    step = 1 if side == "bottom" else -1
    cols = slice(max(0, int(tick.pos) - half), int(tick.pos) + half + 1)
    seen = _walk(dark[:, cols].T, tick.end + step, step, limit, along_text=False)
    if not seen:
        raise DigitiseError(f"no label below the tick at {tick.pos:.1f}")
    rows = slice(min(seen), max(seen) + 1)
    wide = slice(max(0, int(tick.pos) - 2 * half), int(tick.pos) + 2 * half + 1)
    a, b = _nearest_run(dark[rows, wide].any(axis=0), wide.start, tick.pos,
                        max(3, int(0.4 * (rows.stop - rows.start))))
    return rows, slice(a, b)


def read_tick_labels(img: np.ndarray, frame: Frame, side: str,
                     ticks: Sequence[Tick]) -> list[float]:
    """The value of each tick's label, read glyph by glyph (see :func:`read_label`)."""
    spacing = float(np.median(np.diff([t.pos for t in ticks]))) if len(ticks) > 1 else 20.0
    values = []
    for t in ticks:
        text = read_label(img, *_label_box(img, frame, side, t, spacing))
        try:
            values.append(float(text.replace("\u2212", "-")))
        except ValueError as exc:
            raise DigitiseError(f"tick label read as {text!r}, not a number") from exc
    return values


# ---------------------------------------------------------------- axes
@dataclass(frozen=True)
class Axis:
    """value = a + b * pixel (``log``: log10(value) = a + b * pixel); ``error`` is the RMS
    residual of the fit in pixels (at least 0.1)."""

    a: float
    b: float
    log: bool = False
    error: float = 0.1

    def value(self, px):
        v = self.a + self.b * np.asarray(px, float)
        return 10.0 ** v if self.log else v

    def pixel(self, value):
        v = np.log10(np.asarray(value, float)) if self.log else np.asarray(value, float)
        return (v - self.a) / self.b

    def per_pixel(self, at=None) -> float:
        """Data units per pixel (at a value, for a log axis)."""
        if not self.log:
            return abs(self.b)
        return float(abs(self.b) * np.log(10.0) * np.asarray(at, float))


def axis_from_ticks(ticks: Sequence[Tick], values: Sequence[float], log: bool = False,
                    max_residual: float = 1.0) -> Axis:
    """The least-squares pixel -> value map through the ticks; refuses a fit whose residual
    exceeds ``max_residual`` pixels (a misread label or a wrong tick)."""
    if len(ticks) != len(values) or len(ticks) < 2:
        raise DigitiseError(f"{len(ticks)} ticks for {len(values)} values")
    px = np.array([t.pos for t in ticks])
    v = np.log10(np.asarray(values, float)) if log else np.asarray(values, float)
    b, a = np.polyfit(px, v, 1)
    resid_px = np.abs((v - (a + b * px)) / b)
    if resid_px.max() > max_residual:
        raise DigitiseError(f"ticks {list(values)} are not evenly placed (residual "
                            f"{resid_px.max():.2f} px): a label was misread")
    return Axis(float(a), float(b), log, max(0.1, float(np.sqrt((resid_px ** 2).mean()))))


# ---------------------------------------------------------------- lines
def line_mask(img: np.ndarray, colour: Sequence[float], tol: float = 0.2) -> np.ndarray:
    """Pixels of an opaque line of ``colour`` (RGB in [0, 1]): within ``tol`` of it."""
    return np.linalg.norm(img - np.asarray(colour, float), axis=2) < tol


def _edge_runs(sub: np.ndarray, step: int, min_len: int) -> list[tuple[int, int, int]]:
    """(row, start, stop) of long runs of legend-edge pixels in the rows of ``sub``. matplotlib
    draws the legend at 80 % opacity: its face turns what lies under it into 0.8 + 0.2 u, its
    light-grey (0.8) edge into 0.64 + 0.2 u, so an edge pixel is 0.16 darker in every channel
    than the face next to it (``step`` rows further, 1 to 3 for a thick edge) whatever lies
    under both. Runs interrupted for up to 16 px are joined."""
    out = []
    h = sub.shape[0]
    hits = np.zeros(sub.shape[:2], bool)
    for k in (1, 2, 3):
        if k >= h:
            break
        if step > 0:  # the face k rows below
            hits[:-k] |= (np.abs(sub[k:] - sub[:-k] - 0.16) < 0.035).all(axis=2)
        else:
            hits[k:] |= (np.abs(sub[:-k] - sub[k:] - 0.16) < 0.035).all(axis=2)
    for r in np.flatnonzero(hits.sum(axis=1) >= min_len // 2):
        runs: list[list[int]] = []
        for a, b in _runs(hits[r]):
            if runs and a - runs[-1][1] <= 16:
                runs[-1][1] = b
            else:
                runs.append([a, b])
        out += [(r, a, b) for a, b in runs if b - a >= min_len]
    return out


def legend_box(img: np.ndarray, frame: Frame) -> tuple[int, int, int, int] | None:
    """(row0, row1, col0, col1) of the legend inside a frame, or None: matplotlib's box, found
    by its edges (:func:`_edge_runs`, over any background): a left and a right edge joined by
    a top or a bottom edge (a line drawn under one edge can hide it). Returned with a margin of
    2 % of the frame's width (the edges' ends, the rounded corners)."""
    r0, r1, c0, c1 = frame.inner
    r0, r1, c0, c1 = r0 + 4, r1 - 4, c0 + 4, c1 - 4  # not the spines' anti-aliased edges
    sub = img[r0:r1 + 1, c0:c1 + 1]
    near = max(4, int(0.02 * sub.shape[1]))
    min_w, min_h = max(15, int(0.06 * sub.shape[1])), max(12, int(0.06 * sub.shape[0]))
    tops, bottoms = _edge_runs(sub, 1, min_w), _edge_runs(sub, -1, min_w)
    lefts = _edge_runs(sub.transpose(1, 0, 2), 1, min_h)
    rights = _edge_runs(sub.transpose(1, 0, 2), -1, min_h)
    boxes = []
    for horizontal, at_top in ((tops, True), (bottoms, False)):
        for r, a, b in horizontal:
            def joins(v, col, r=r, at_top=at_top):
                c, u, w = v
                end = u if at_top else w
                return abs(c - col) <= 2 * near and abs(end - r) <= 2 * near
            left = [v for v in lefts if joins(v, a)]
            right = [v for v in rights if joins(v, b)]
            if not (left and right):
                continue
            far = [v[2] if at_top else v[1] for v in left + right]
            top, bottom = (r, max(far)) if at_top else (min(far), r)
            if bottom - top >= min_h:
                boxes.append((top, bottom, min(v[0] for v in left), max(v[0] for v in right)))
    if not boxes:
        return None
    top, bottom, left, right = max(boxes, key=lambda q: (q[1] - q[0]) * (q[3] - q[2]))
    return (max(top + r0 - near, frame.inner[0]), min(bottom + r0 + near, frame.inner[1]),
            max(left + c0 - near, frame.inner[2]), min(right + c0 + near, frame.inner[3]))


def _column_centres(mask: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(column, centre row) of the line pixels in each of ``cols`` that holds some."""
    xs, ys = [], []
    for c in cols:
        rows = np.flatnonzero(mask[:, c])
        if rows.size:
            xs.append(c)
            ys.append(0.5 * (rows.min() + rows.max()))
    return np.array(xs, float), np.array(ys, float)


def _robust_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """(slope, intercept, RMS residual) of a least-squares line refitted without points more
    than 2 px (and 3 robust sigmas) off; None with fewer than 2 points."""
    if x.size < 2 or np.ptp(x) == 0:
        return None
    keep = np.ones(x.size, bool)
    for _ in range(3):
        if keep.sum() < 2 or np.ptp(x[keep]) == 0:
            return None
        s, i = np.polyfit(x[keep], y[keep], 1)
        r = np.abs(y - (s * x + i))
        mad = np.median(r[keep]) * 1.4826
        new = r <= max(2.0, 3 * mad)
        if (new == keep).all():
            break
        keep = new
    s, i = np.polyfit(x[keep], y[keep], 1)
    return float(s), float(i), float(np.sqrt(np.mean((y[keep] - (s * x[keep] + i)) ** 2)))


def segment_fits(mask: np.ndarray, xs_px: Sequence[float], margin: float = 2.0,
                 exclude: np.ndarray | None = None) -> list[tuple[float, float, float] | None]:
    """(slope, intercept, RMS residual) of each segment between consecutive vertex x: a straight
    line through the centres of its pixels column by column (at least 3 columns), leaving
    ``margin`` px at each end (corners, caps); None where too few pixels show."""
    m = mask if exclude is None else mask & ~exclude
    xs = np.asarray(xs_px, float)
    fits = []
    for a, b in zip(xs[:-1], xs[1:], strict=True):
        lo, hi = int(np.ceil(a + margin)), int(np.floor(b - margin))
        cols = np.arange(max(lo, 0), min(hi, m.shape[1] - 1) + 1)
        cx, cy = _column_centres(m, cols)
        fits.append(_robust_line(cx, cy) if cx.size >= 3 else None)
    return fits


def corner_offsets(fits: Sequence, xs_px: Sequence[float], min_turn: float = 1.0) -> list[float]:
    """Where two segment fits meet, minus the vertex x they should meet at (px), at every
    corner sharp enough (slopes differing by ``min_turn`` px/px) to place it: measures the
    offset of the x calibration (tick marks are snapped to whole pixels, lines are not)."""
    out = []
    for k in range(1, len(xs_px) - 1):
        f, g = fits[k - 1], fits[k]
        if f is None or g is None or abs(f[0] - g[0]) < min_turn:
            continue
        out.append((g[1] - f[1]) / (f[0] - g[0]) - float(xs_px[k]))
    return out


def trace_line(mask: np.ndarray, xs_px: Sequence[float], margin: float = 2.0,
               exclude: np.ndarray | None = None,
               x_error: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Row (sub-pixel) of a piecewise-linear line at each vertex x, and its reading error (px).

    A vertex is the mean of its two segments' values at it (:func:`segment_fits`); a vertex
    with no fitted segment on either side is NaN (:func:`hidden` finds points under a legend).
    The error is a pixel (the tick marks and a straight horizontal line are snapped to whole
    pixels when drawn: half a pixel each), plus half the two sides' disagreement (a whole pixel
    with one side only), plus the fits' RMS residual, plus the steepest side's slope times
    ``x_error`` (the x calibration's error in px).
    """
    xs = np.asarray(xs_px, float)
    if xs.size < 2:
        raise DigitiseError("a line needs at least two vertices")
    fits = segment_fits(mask, xs, margin, exclude)
    ys, err = np.full(xs.size, np.nan), np.full(xs.size, np.nan)
    for k, x in enumerate(xs):
        sides = [f for f in (fits[k - 1] if k > 0 else None,
                             fits[k] if k < len(fits) else None) if f is not None]
        if not sides:
            continue
        est = [f[0] * x + f[1] for f in sides]
        ys[k] = float(np.mean(est))
        spread = abs(est[0] - est[1]) / 2 if len(est) == 2 else 1.0
        err[k] = (1.0 + spread + max(f[2] for f in sides)
                  + max(abs(f[0]) for f in sides) * x_error)
    return ys, err


def hidden(exclude: np.ndarray | None, xs_px: Sequence[float], ys_px: Sequence[float]
           ) -> np.ndarray:
    """Which (x, y) points fall on excluded pixels (a legend over the plot)."""
    out = np.zeros(len(xs_px), bool)
    if exclude is None:
        return out
    for k, (x, y) in enumerate(zip(xs_px, ys_px, strict=True)):
        if np.isfinite(x) and np.isfinite(y):
            r = int(round(min(max(y, 0), exclude.shape[0] - 1)))
            c = int(round(min(max(x, 0), exclude.shape[1] - 1)))
            out[k] = bool(exclude[r, c])
    return out


# ---------------------------------------------------------------- bands
def _composites(colours: Sequence[Sequence[float]], alpha: float) -> np.ndarray:
    """The colour of every subset of translucent layers over white, drawn in order
    (index = bit mask of the layers present)."""
    n = len(colours)
    out = np.ones((2 ** n, 3))
    for s in range(2 ** n):
        c = np.ones(3)
        for k in range(n):
            if s >> k & 1:
                c = (1 - alpha) * c + alpha * np.asarray(colours[k], float)
        out[s] = c
    return out


def band_coverage(img: np.ndarray, colours: Sequence[Sequence[float]], alpha: float = 0.2,
                  tol: float = 0.012) -> np.ndarray:
    """Bit mask per pixel of the translucent bands covering it (bit k: band k, drawn k-th);
    -1 where no combination matches within ``tol`` (lines, text, anti-aliased edges)."""
    comp = _composites(colours, alpha)
    flat = np.round(img.reshape(-1, 3) * 255).astype(np.int64)
    packed = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    unique, inverse = np.unique(packed, return_inverse=True)  # few colours: match each once
    rgb = np.stack([unique >> 16, (unique >> 8) & 255, unique & 255], axis=1) / 255.0
    d = np.linalg.norm(rgb[:, None, :] - comp[None, :, :], axis=2)
    best = d.argmin(axis=1)
    best[d[np.arange(rgb.shape[0]), best] > tol] = -1
    return best[inverse.ravel()].reshape(img.shape[:2])


def band_edges(coverage: np.ndarray, k: int, xs_px: Sequence[float],
               rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Top and bottom row (sub-pixel: the half-covered edge pixel counts half) of band ``k`` in
    the columns nearest each x, between ``rows`` (inclusive); NaN where the band is absent.
    Pixels that match no combination (a line drawn over the band) next to the band's extent
    are counted in it up to a run of 8 px."""
    tops, bottoms = [], []
    r0, r1 = rows
    for x in xs_px:
        c = int(round(x))
        col = coverage[r0:r1 + 1, c]
        inside = (col >= 0) & ((col >> k) & 1 == 1)
        idx = np.flatnonzero(inside)
        if idx.size == 0:
            tops.append(np.nan)
            bottoms.append(np.nan)
            continue
        top, bot = idx.min(), idx.max()
        for direction in (-1, 1):
            j, run = (top, 0) if direction < 0 else (bot, 0)
            while 0 <= j + direction < col.size and col[j + direction] < 0 and run < 8:
                j, run = j + direction, run + 1
            if 0 <= j + direction < col.size and run and (col[j + direction] >= 0 and (
                    (col[j + direction] >> k) & 1)):
                if direction < 0:
                    top = j + direction
                else:
                    bot = j + direction
        tops.append(r0 + top - 0.5)
        bottoms.append(r0 + bot + 0.5)
    return np.array(tops, float), np.array(bottoms, float)


# ---------------------------------------------------------------- heatmaps
def _cell_edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges of ``pcolormesh(shading="nearest")``: midpoints between centres (in data
    units, as matplotlib computes them), the ends mirrored."""
    c = np.asarray(centres, float)
    mid = (c[:-1] + c[1:]) / 2
    return np.concatenate([[c[0] - (mid[0] - c[0])], mid, [c[-1] + (c[-1] - mid[-1])]])


def _inside(a: float, b: float, lo: int, hi: int) -> slice | None:
    """The pixels well inside a cell spanning [a, b] (px) of an interior [lo, hi]: a fifth of
    the cell's width in from each side, and clear of the spines; None if nothing is left."""
    a, b = max(a, lo + 1.5), min(b, hi - 1.5)
    if b - a < 1:
        return None
    inset = 0.2 * (b - a) if b - a >= 5 else 0.0
    first, last = int(np.ceil(a + inset)), int(np.floor(b - inset))
    return slice(first, last + 1) if last >= first else None


def read_heatmap(img: np.ndarray, frame: Frame, xaxis: Axis, yaxis: Axis,
                 x_centres: Sequence[float], y_centres: Sequence[float],
                 colorbar: Frame, cbar_axis: Axis,
                 cmap: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Values (len(y) x len(x)) of a ``pcolormesh(..., shading="nearest")`` heatmap, and the
    reading error (a bound) of each.

    With ``cmap`` (the colour map the plotting code names) a cell's colour is its entry k of
    the map's N colours, so its value lies in vmin + [k, k + 1) / N x (vmax - vmin), where vmin
    and vmax are the colour bar's ends read by its ticks: the middle is returned, the error is
    half a level plus the ends' error (the bar's calibration and half a pixel). Without it the
    colour is looked up on the bar itself (the rows of the nearest colour, mapped by the ticks).
    """
    r0, r1, c0, c1 = frame.inner
    bar_r0, bar_r1, bar_c0, bar_c1 = colorbar.inner
    bar_col = img[bar_r0:bar_r1 + 1, (bar_c0 + bar_c1) // 2]
    bar_rows = np.arange(bar_r0, bar_r1 + 1)
    lut = None
    if cmap is not None:
        import matplotlib

        cm = matplotlib.colormaps[cmap]
        lut = cm(np.arange(cm.N))[:, :3]
        # the bar's ends are vmin and vmax (its spines' centres)
        vmin = float(cbar_axis.value(np.mean(colorbar.bottom)))
        vmax = float(cbar_axis.value(np.mean(colorbar.top)))
        end_error = (cbar_axis.error + 0.5) * cbar_axis.per_pixel()
    xe, ye = _cell_edges(np.asarray(x_centres)), _cell_edges(np.asarray(y_centres))
    values = np.full((len(y_centres), len(x_centres)), np.nan)
    errors = np.full_like(values, np.nan)
    for i in range(len(y_centres)):
        ya, yb = sorted(float(p) for p in yaxis.pixel([ye[i], ye[i + 1]]))
        rs = _inside(ya, yb, r0, r1)
        for j in range(len(x_centres)):
            xa, xb = sorted(float(p) for p in xaxis.pixel([xe[j], xe[j + 1]]))
            cs = _inside(xa, xb, c0, c1)
            if rs is None or cs is None:
                continue
            patch = img[rs, cs].reshape(-1, 3)
            colour = np.median(patch, axis=0)
            if np.mean(np.linalg.norm(patch - colour, axis=1) < 0.02) < 0.9:
                raise DigitiseError(f"heatmap cell ({i}, {j}) is not one colour")
            if lut is not None:
                k = int(np.argmin(np.linalg.norm(lut - colour, axis=1)))
                values[i, j] = vmin + (k + 0.5) / len(lut) * (vmax - vmin)
                errors[i, j] = 0.5 * (vmax - vmin) / len(lut) + end_error
                continue
            d = np.linalg.norm(bar_col - colour, axis=1)
            hit = bar_rows[d <= d.min() + 0.004]
            v = cbar_axis.value(hit)
            values[i, j] = float(cbar_axis.value(hit.mean()))
            errors[i, j] = float(np.ptp(v) / np.sqrt(12) + cbar_axis.error * cbar_axis.per_pixel()
                                 + 0.5 * cbar_axis.per_pixel())
    return values, errors


# ---------------------------------------------------------------- whole plots
@dataclass(frozen=True)
class Series:
    """One plotted series: its name, line colour, the data x of its vertices, and whether it
    has a ``fill_between`` band (drawn in the order of the series that have one). ``hline``:
    one value drawn as a horizontal line across ``x`` (a non-private reference)."""

    name: str
    colour: tuple[float, float, float]
    x: tuple[float, ...]
    band: bool = True
    hline: bool = False


def _interior_mask(shape: tuple[int, int], frame: Frame, legend) -> np.ndarray:
    """True outside the frame's interior (spines and 2 px beside them) and on the legend."""
    r0, r1, c0, c1 = frame.inner
    out = np.ones(shape, bool)
    out[r0 + 2:r1 - 1, c0 + 2:c1 - 1] = False
    if legend is not None:
        out[max(legend[0], 0):legend[1] + 1, max(legend[2], 0):legend[3] + 1] = True
    return out


def _x_offset(series: Sequence[Series], masks: dict, xaxis: Axis,
              exclude: np.ndarray) -> tuple[float, float]:
    """(shift, error) in px of the vertices' x: the median offset of the sharp corners of all
    series (:func:`corner_offsets`) when at least three show, its standard error added to the
    calibration's; else no shift and half a pixel more error (tick marks snap to pixels)."""
    offsets = []
    for s in series:
        if not s.hline and len(s.x) > 2:
            xs = xaxis.pixel(np.asarray(s.x, float))
            offsets += corner_offsets(segment_fits(masks[s.name], xs, exclude=exclude), xs)
    offsets = [o for o in offsets if abs(o) <= 1.5]
    if len(offsets) < 3:
        return 0.0, xaxis.error + 0.5
    o = np.asarray(offsets)
    spread = 1.4826 * float(np.median(np.abs(o - np.median(o))))
    return float(np.median(o)), 0.1 + spread / np.sqrt(o.size)


def read_line_plot(img: np.ndarray, series: Sequence[Series],
                   x_ticks: Sequence[float] | None = None, band_colours=None,
                   band_alpha: float = 0.2) -> list[dict]:
    """Every vertex of every series of a line plot: ``series``, ``x``, ``value`` (NaN where not
    readable), ``error`` (data units), ``std`` (the band's half height; NaN without a band,
    0 where the band hides under its line) and ``hidden`` (under the legend).

    The y axis is calibrated from its ticks and their labels; the x axis from its ticks and
    ``x_ticks`` (the values the plotting code set) or their labels. ``band_colours``: the
    bands' fill colours in drawing order (default: matplotlib's colour cycle C0, C1, ...)."""
    frame = find_frames(img)[0]
    yt = find_ticks(img, frame, "left")
    yaxis = axis_from_ticks(yt, read_tick_labels(img, frame, "left", yt))
    xt = find_ticks(img, frame, "bottom")
    xv = list(x_ticks) if x_ticks is not None else read_tick_labels(img, frame, "bottom", xt)
    if len(xv) != len(xt):
        raise DigitiseError(f"{len(xt)} x ticks found for {len(xv)} values {xv}")
    xaxis = axis_from_ticks(xt, xv)
    legend = legend_box(img, frame)
    exclude = _interior_mask(img.shape[:2], frame, legend)
    on_legend = _interior_mask(img.shape[:2], frame, legend) & ~_interior_mask(
        img.shape[:2], frame, None)
    r0, r1, c0, c1 = frame.inner
    banded = [s for s in series if s.band]
    if band_colours is None:
        import matplotlib.colors as mcolors

        band_colours = [mcolors.to_rgb(f"C{i}") for i in range(len(banded))]
    coverage = np.full(img.shape[:2], -1)
    if banded:
        coverage[r0:r1 + 1, c0:c1 + 1] = band_coverage(img[r0:r1 + 1, c0:c1 + 1],
                                                       band_colours, band_alpha)
        coverage[exclude] = -1
    per_px = yaxis.per_pixel()
    masks = {s.name: line_mask(img, s.colour) for s in series}
    shift, x_error = _x_offset(series, masks, xaxis, exclude)
    rows = []
    for s in series:
        xs = xaxis.pixel(np.asarray(s.x, float)) + shift
        ys, err_px = trace_line(masks[s.name], xs, exclude=exclude, x_error=x_error)
        under = hidden(on_legend, xs, ys)
        ys[under] = np.nan
        std = np.full(xs.size, np.nan)
        if s.band:
            k = banded.index(s)
            cols = xs.copy()
            cols[0], cols[-1] = cols[0] + 1.5, cols[-1] - 1.5  # inside the band's ends
            cols = np.clip(cols, c0 + 2, c1 - 2)
            top, bottom = band_edges(coverage, k, cols, (r0, r1))
            std = (bottom - top) / 2 * per_px
            std[np.isnan(std) & np.isfinite(ys)] = 0.0  # the band hides under its line
            std[under] = np.nan
        value = yaxis.value(ys)
        error = (err_px + yaxis.error) * per_px
        if s.hline:
            ok = np.isfinite(value)
            if not ok.any():
                rows.append({"series": s.name, "x": np.nan, "value": np.nan,
                             "error": np.nan, "std": np.nan, "hidden": bool(under.all())})
                continue
            rows.append({"series": s.name, "x": np.nan, "value": float(np.median(value[ok])),
                         "error": float(np.median(error[ok]) + np.ptp(value[ok]) / 2),
                         "std": float(np.nanmedian(std)) if np.isfinite(std).any() else np.nan,
                         "hidden": False})
            continue
        rows += [{"series": s.name, "x": float(x), "value": float(v), "error": float(e),
                  "std": float(sd), "hidden": bool(h)}
                 for x, v, e, sd, h in zip(s.x, value, error, std, under, strict=True)]
    return rows


def read_heatmap_plot(img: np.ndarray, x_centres: Sequence[float], y_centres: Sequence[float],
                      x_limits: tuple[float, float], x_log: bool = True,
                      cmap: str | None = None) -> list[dict]:
    """Every cell of a ``pcolormesh(shading="nearest")`` heatmap with a colour bar: ``x``,
    ``y``, ``value`` and ``error`` (data units). The x axis (log by default) is calibrated by
    its major ticks, whose values are the decades between ``x_limits`` (the limits the plotting
    code set); the y axis and the colour bar by their tick labels; ``cmap``: see
    :func:`read_heatmap`."""
    frames = find_frames(img)
    main, bar = sorted(frames[:2], key=lambda f: f.left[0])
    if bar.width > main.width:
        raise DigitiseError("no colour bar right of the heatmap")
    xt = find_ticks(img, main, "bottom")
    if x_log:
        lo, hi = np.log10(x_limits)
        xv = [10.0 ** e for e in range(int(np.ceil(lo - 1e-9)), int(np.floor(hi + 1e-9)) + 1)]
    else:
        xv = read_tick_labels(img, main, "bottom", xt)
    xaxis = axis_from_ticks(xt, xv, log=x_log)
    yt = find_ticks(img, main, "left")
    yaxis = axis_from_ticks(yt, read_tick_labels(img, main, "left", yt))
    bt = find_ticks(img, bar, "right")
    baxis = axis_from_ticks(bt, read_tick_labels(img, bar, "right", bt))
    values, errors = read_heatmap(img, main, xaxis, yaxis, x_centres, y_centres, bar, baxis,
                                  cmap)
    return [{"x": float(x), "y": float(y), "value": float(values[i, j]),
             "error": float(errors[i, j])}
            for i, y in enumerate(y_centres) for j, x in enumerate(x_centres)]
