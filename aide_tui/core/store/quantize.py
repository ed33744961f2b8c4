"""The static tier's vectors on disk: four bits a value with one float32 scale per row.

A row of ``(pieces, d / 2 + 4)`` uint8 holds the vector's ``d`` values scaled to -7..7 by its largest
magnitude, stored as 1..15 two to a byte (byte ``j`` holds value ``j`` in its high half and value
``j + d / 2`` in its low half), then the 4 bytes of that scale (float32). A quarter of float16's bytes:
119 → 60 MB on the 6M-line monorepo, and the public eval's static-tier rankings did not move (overall
MRR@10 .917 with a byte a value, .919 with four bits; cMRR .808 / .804).

Segments written before hold ``(pieces, d + 4)`` int8 rows (a byte a value, scaled to -127..127); the
dtype tells the two apart, every reader takes both, and a merge writes four bits. An odd ``d`` keeps a
byte a value.
"""

from __future__ import annotations

import numpy as np

SCALE_BYTES = 4
NIBBLE_MAX = 7  # values -7..7, stored as 1..15
BYTE_MAX = 127  # the byte layout's values -127..127


def _scales(v: np.ndarray, top: float) -> np.ndarray:
    scale = np.abs(v).max(axis=1) / np.float32(top) if len(v) else np.zeros(0, np.float32)
    return np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)


def pack(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float vectors as packed rows: four bits a value, (n, d / 2 + 4) uint8 (a byte a value when
    ``d`` is odd)."""
    v = np.asarray(vectors, np.float32)
    d = v.shape[1]
    if d % 2:
        return pack_bytes(v)
    scale = _scales(v, NIBBLE_MAX)
    q = (np.clip(np.rint(v / scale[:, None]), -NIBBLE_MAX, NIBBLE_MAX) + (NIBBLE_MAX + 1)).astype(np.uint8)
    h = d // 2
    out = np.empty((len(v), h + SCALE_BYTES), np.uint8)
    out[:, :h] = (q[:, :h] << 4) | q[:, h:]
    out[:, h:] = scale.view(np.uint8).reshape(len(v), SCALE_BYTES)
    return out


def pack_bytes(vectors: np.ndarray) -> np.ndarray:
    """(n, d) float vectors as (n, d + 4) int8 rows, a byte a value (the layout of earlier segments)."""
    v = np.asarray(vectors, np.float32)
    scale = _scales(v, BYTE_MAX)
    out = np.empty((len(v), v.shape[1] + SCALE_BYTES), np.int8)
    out[:, : v.shape[1]] = np.clip(np.rint(v / scale[:, None]), -BYTE_MAX, BYTE_MAX).astype(np.int8)
    out[:, v.shape[1] :] = scale.view(np.int8).reshape(len(v), SCALE_BYTES)
    return out


def is_packed(arr: np.ndarray) -> bool:
    """Whether ``arr`` holds packed rows of either layout (not float vectors)."""
    return arr.dtype in (np.int8, np.uint8)


def width(packed: np.ndarray) -> int:
    """The vectors' dimension."""
    if len(packed.shape) != 2 or packed.shape[1] <= SCALE_BYTES:
        return 0
    stored = int(packed.shape[1]) - SCALE_BYTES
    return 2 * stored if packed.dtype == np.uint8 else stored


def _stored(rows: np.ndarray, out: np.ndarray, tmp: np.ndarray | None = None) -> int:
    """The stored values of ``rows`` (without their scales) into float32 ``out`` (k, d), and the offset
    they carry (8 for four bits, stored as 1..15; 0 for a byte). ``tmp``: a reused (k, d / 2) uint8
    buffer for the halves."""
    if rows.dtype != np.uint8:
        np.copyto(out, rows[:, : out.shape[1]], casting="unsafe")
        return 0
    h = out.shape[1] // 2
    half = np.empty((len(rows), h), np.uint8) if tmp is None else tmp[: len(rows)]
    np.right_shift(rows[:, :h], 4, out=half)
    np.copyto(out[:, :h], half, casting="unsafe")
    np.bitwise_and(rows[:, :h], 15, out=half)
    np.copyto(out[:, h:], half, casting="unsafe")
    return NIBBLE_MAX + 1


def _row_scales(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows[:, -SCALE_BYTES:]).view(np.float32).reshape(len(rows))


def unpack(packed: np.ndarray) -> np.ndarray:
    """Packed rows (either layout) back as (n, d) float32 vectors."""
    out = np.empty((len(packed), width(packed)), np.float32)
    out -= _stored(packed, out)
    out *= _row_scales(packed)[:, None]
    return out


def current(packed: np.ndarray) -> np.ndarray:
    """Packed rows in the layout a new segment is written in (earlier rows re-packed)."""
    return packed if packed.dtype == np.uint8 or width(packed) % 2 else pack(unpack(packed))


BUFFER_BYTES = 512 << 10  # the reused float32 buffer: it stays in a core's L2 cache (4 MB did not)


def unpacked_matmul(packed: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``unpack(packed) @ right`` without a float32 copy of all the rows: a few hundred packed rows at a
    time are converted into one reused buffer (it stays in cache, and no fresh pages are faulted in
    for every block: 3× faster than one ``astype`` over a window on 450k rows; a 512 KiB buffer
    against 4 MiB, 1.6× faster again), multiplied, and each row of the product is scaled by its
    row's scale. Four bits a value costs a tenth more than a byte here (two masks instead of one
    copy; the offset of the stored halves comes off the product, not off every value) and reads half
    the bytes."""
    d = width(packed)
    n = len(packed)
    step = max(1, BUFFER_BYTES // (4 * max(d, 1)))
    out = np.empty((n, *right.shape[1:]), np.float32)
    buf = np.empty((min(n, step), d), np.float32)
    tmp = np.empty((min(n, step), d // 2), np.uint8)
    column_sums = right.sum(axis=0)  # the stored values' offset times these comes off each product
    for lo in range(0, n, step):
        rows = packed[lo : lo + step]
        k = len(rows)
        offset = _stored(rows, buf[:k], tmp)
        part = out[lo : lo + k]
        np.matmul(buf[:k], right, out=part)
        if offset:
            part -= offset * column_sums
        scale = _row_scales(rows)
        part *= scale[:, None] if out.ndim == 2 else scale
    return out
