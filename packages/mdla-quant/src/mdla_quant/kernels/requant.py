"""Fused per-channel requantization: MBQM, output offset and clamp in a few in-place passes.

`conv.requantize` (bias, `arith.mbqm`, `arith.add_offset`, clamp) is the definition; this is
the same function of the accumulator rearranged so that a whole conv output costs 4 int64 and
~5 int32 numpy passes over preallocated buffers instead of ~25 int64 passes over fresh
temporaries. It applies only where the rearrangement is provably exact (`Requant.build` returns
None otherwise and the caller runs the definition); tests/quant/test_fast_kernels.py compares
the two on ties, signs and int32 extremes.

The caller passes the *raw* sum r = sum w * x (x not offset by z_in: padding with z_in makes
every output see all K taps) and a per-channel offset, acc = r + off with
off = bias - z_in * sum(w). With M' = M * 2^left and p = acc * M' (M >= 0, so the SRDHM
saturation a = b = -2^31 never occurs):

  double rounding, s = left - e (left = max(s, 0), e = max(-s, 0)):
    v   = floor((p + 2^30) / 2^31)                                  SRDHM
    out = (v + 2^(e-1) + (v >> 31)) >> e    e > 0                   RDBPOT: v >> 31 = -[v < 0]
        = v                                 e = 0
  single rounding (TFLITE_SINGLE_ROUNDING), t = 31 - s:
    out = floor((p + 2^(t-1)) / 2^t) = floor(floor((p + 2^(t-1)) / 2^s1) / 2^(t-s1)),
          s1 = min(t, 31)                   (nested floors of a power-of-two division fold)

Passes: a = r (int64, exact: the float holds an integer below 2^53), a *= M',
a += off * M' + (2^30 or 2^(t-1)), v = a >> 31 (or >> s1) stored as int32, then in int32 the
RDBPOT correction and shift, the clamp to [lo - z_out, hi - z_out] stored as int8, and
+ z_out in int8: clip(out, lo - z, hi - z) + z = clip(out + z, lo, hi), and an int8 sum that
lands in [lo, hi] is exact (a two's-complement wrap of an in-range value is the value).

Exactness conditions, checked per channel in Python integers before any pass runs (R and B
bound |r| and |acc| over every possible input: R = 128 * sum|w|, B = max|x - z_in| * sum|w|
+ |bias|):
- B * 2^left <= 2^31 - 1: the int32 accumulator and `x << left` never overflow, so "wrap" and
  "saturate" (and `check_int32`) leave every value unchanged;
- R * M' and |a| <= B * M' + |rounding term| stay below 2^63 (int64 exact);
- v, v + 2^(e-1) and v - 1 stay in int32 (the int32 passes are exact);
- under accumulator "wrap", out and out + z_out stay in int32, so neither single rounding's
  int32 cast nor the output offset's `+=` wraps (under "saturate" both are exact sums in the
  definition and the int8 clamp follows).

Where also R * M', |add1| and |a| stay below 2^53 (most layers: R < 2^22 with M' < 2^31), the
int64 passes up to v run in float64 instead (`fmult`, `fadd1`): f = r, f *= M' / 2^s1,
f += add1 / 2^s1, v = floor(f). Each step is exact: r * M' is an integer below 2^53 and the
scaling by 2^-s1 only moves the exponent, so the product is representable and IEEE returns
it; the sum's exact value a / 2^s1 is representable too (|a| < 2^53), so the addition does
not round; floor is exact. So v is the same integer as a >> s1, in cheaper passes.

One floor (`gmult`, `gadd`): with k = s1 + shift2 and h = add2 (2^(e-1), or 0), the nested
floors fold, floor((floor(a / 2^s1) + h) / 2^(k-s1)) = floor((a + h * 2^s1) / 2^k), so
    out = floor((p + rnd + h * 2^s1) / 2^k)
where RDBPOT's -[v < 0] is absent: single rounding has none, e = 0 has none, and where the
clamp's lo = act_min - z_out >= 0 it cannot matter (v < 0 gives out <= 0 with or without it,
as (v + 2^(e-1) - [v < 0]) / 2^e < 1/2, and every out <= 0 clamps to lo). Adding the integer
z_out + 128 inside the floor, and clamping before the floor (floor is non-decreasing and fixes
the integer bounds, so floor(clip(y, L, H)) = clip(floor(y), L, H)):
    y = r * gmult + gadd = (r * M' + A) / 2^k,  A = off * M' + rnd + h * 2^s1 + (z_out + 128) * 2^k
    out + z_out + 128 = floor(clip(y, act_min + 128, act_max + 128))
which lies in [0, 255]: the float-to-uint8 cast truncates, which is the floor of a value >= 0,
and the uint8 code u is the int8 code u - 128 with its top bit flipped (u ^ 0x80). Exact in
float64 where |r * M'| <= R * M' < 2^53, |A| < 2^53 and |acc * M' + A - off * M'| <= B * M'
+ |A - off * M'| < 2^53 (the numerators are integers below 2^53 and the scaling by 2^-k only
moves the exponent, as for the float64 stage). Passes: f = r, f *= gmult, f += gadd, clip,
the uint8 cast, ^ 0x80.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdla_quant.arith import Array

I64_LIMIT = 2**63 - 1
F64_EXACT = 2**53  # every integer of smaller magnitude is a float64
# one-floor form: a sum at or beyond 2^53 / 2^k rounds to a float at or beyond it (rounding is
# monotone and 2^53 / 2^k is a float), and for k <= K_SIDE that is beyond both clamp bounds,
# which lie in [0, 255]
K_SIDE = 44  # 2^(53-44) = 512
I32_MIN, I32_MAX = -(2**31), 2**31 - 1

Operand = Array | int  # a per-channel array, or one int where every channel agrees


@dataclass(frozen=True, slots=True)
class Requant:
    """Per-channel constants of the fused requantization (see the module docstring)."""

    mult: Array  # int64: M * 2^left
    add1: Array  # int64: off * M' + 2^30 (double) or off * M' + 2^(t-1) (single)
    shift1: Operand  # int64: 31 (double) or min(t, 31) (single)
    sign_mask: Operand | None  # int32: -1 where e > 0 else 0; None: no channel has e > 0
    add2: Operand | None  # int32: 2^(e-1) where e > 0 else 0; None: all 0
    shift2: Operand | None  # int32: e (double) or t - s1 (single); None: all 0
    lo: int  # clamp bounds before the output offset: act_min - z_out, act_max - z_out
    hi: int
    z_out: int
    fmult: Array | None = None  # float64: M' / 2^s1, where the float64 passes are exact
    fadd1: Array | None = None  # float64: add1 / 2^s1
    gmult: Array | None = None  # float64: M' / 2^k, where the one-floor form applies
    gadd: Array | None = None  # float64: A / 2^k
    tiles: dict[int, Requant] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def build(
        m: Array,
        s: Array,
        off: Array,
        bound: Array,
        raw_bound: Array,
        rounding: str,
        z_out: int,
        act: tuple[int, int],
        accumulator: str = "saturate",
    ) -> Requant | None:
        """The constants for multipliers (m, s), offsets `off`, |acc| <= bound and
        |r| <= raw_bound per channel; None where an exactness condition fails."""
        cols: list[tuple[int, ...]] = []
        for c in range(len(m)):
            col = _channel(
                int(m[c]), int(s[c]), int(off[c]), int(bound[c]), int(raw_bound[c]), rounding
            )
            if col is None:
                return None
            consts, (out_lo, out_hi) = col
            wraps = out_hi + max(z_out, 0) > I32_MAX or out_lo + min(z_out, 0) < I32_MIN
            if wraps and accumulator == "wrap":
                return None
            cols.append(consts)
        mult, add1, shift1, mask, add2, shift2 = (list(v) for v in zip(*cols, strict=True))
        floats = _float_stage(mult, add1, shift1, off, bound, raw_bound)
        lo = act[0] - z_out
        floor = None
        if rounding == "single" or lo >= 0:
            floor = _floor_stage(cols, z_out, act, off, bound, raw_bound)
        return Requant(
            mult=np.array(mult, np.int64),
            add1=np.array(add1, np.int64),
            shift1=_operand(shift1, np.int64),
            sign_mask=_operand(mask, np.int32) if any(mask) else None,
            add2=_operand(add2, np.int32) if any(add2) else None,
            shift2=_operand(shift2, np.int32) if any(shift2) else None,
            lo=lo,
            hi=act[1] - z_out,
            z_out=z_out,
            fmult=None if floats is None else floats[0],
            fadd1=None if floats is None else floats[1],
            gmult=None if floor is None else floor[0],
            gadd=None if floor is None else floor[1],
        )

    def tiled(self, reps: int) -> Requant:
        """The same constants repeated `reps` times: for rows of `reps` pixels x C channels,
        so that numpy's inner loops run over a whole row instead of C values."""
        if reps == 1:
            return self
        done = self.tiles.get(reps)
        if done is None:

            def tile(v: Any) -> Any:
                return v if v is None or isinstance(v, int) else np.tile(v, reps)

            done = Requant(
                mult=tile(self.mult),
                add1=tile(self.add1),
                shift1=tile(self.shift1),
                sign_mask=tile(self.sign_mask),
                add2=tile(self.add2),
                shift2=tile(self.shift2),
                lo=self.lo,
                hi=self.hi,
                z_out=self.z_out,
                fmult=tile(self.fmult),
                fadd1=tile(self.fadd1),
                gmult=tile(self.gmult),
                gadd=tile(self.gadd),
            )
            self.tiles[reps] = done
        return done

    def apply(self, raw: Array, out: Array, scratch: tuple[Array, Array, Array]) -> None:
        """out[:] = the int8 result for raw sums `raw` (rows, width), float holding exact
        integers, width = C (or reps * C for `tiled(reps)`).

        `scratch`: an int64 and two int32 buffers of raw's shape (reused across blocks)."""
        a, v, t = scratch
        if self.gmult is not None and self.gadd is not None:  # one floor (module docstring)
            f = a.view(np.float64)
            np.copyto(f, raw)
            np.multiply(f, self.gmult, out=f)
            np.add(f, self.gadd, out=f)
            np.clip(f, self.lo + self.z_out + 128, self.hi + self.z_out + 128, out=f)
            u = out.view(np.uint8)
            np.copyto(u, f, casting="unsafe")  # in [0, 255]: truncation is the floor
            np.bitwise_xor(u, np.uint8(0x80), out=u)
            return
        if self.fmult is not None and self.fadd1 is not None:  # exact (module docstring)
            f = a.view(np.float64)
            np.copyto(f, raw)
            np.multiply(f, self.fmult, out=f)
            np.add(f, self.fadd1, out=f)
            np.floor(f, out=f)
            np.copyto(v, f, casting="unsafe")  # integers in int32 range (checked)
        else:
            np.copyto(a, raw, casting="unsafe")  # float64/32 integers below 2^53: exact
            np.multiply(a, self.mult, out=a)
            np.add(a, self.add1, out=a)
            np.right_shift(a, self.shift1, out=v, casting="unsafe")  # in int32 (checked)
        if self.sign_mask is not None:
            np.right_shift(v, 31, out=t)
            if not isinstance(self.sign_mask, int):  # some channels have e = 0
                np.bitwise_and(t, self.sign_mask, out=t)
            np.add(v, t, out=v)
        if self.add2 is not None:
            np.add(v, self.add2, out=v)
        if self.shift2 is not None:
            np.right_shift(v, self.shift2, out=v)
        np.clip(v, self.lo, self.hi, out=out, casting="unsafe")
        np.add(out, np.int8(self.z_out), out=out)


def _channel(
    m: int, s: int, off: int, bound: int, raw_bound: int, rounding: str
) -> tuple[tuple[int, ...], tuple[int, int]] | None:
    """((M', add1, shift1, mask, add2, shift2), (out_lo, out_hi)) of one channel, or None
    where a condition of the module docstring fails."""
    if m < 0 or bound > I32_MAX:
        return None
    if rounding == "single":
        if not -31 <= s <= 30:
            return None
        t = 31 - s
        m2, shift1 = m, min(t, 31)
        add1, mask, add2, shift2 = off * m2 + (1 << (t - 1)), 0, 0, t - shift1
        rnd = 1 << (t - 1)
    else:
        left, e = max(s, 0), max(-s, 0)
        if bound << left > I32_MAX or e > 31:
            return None
        m2, shift1, rnd = m << left, 31, 1 << 30
        add1, mask, add2, shift2 = off * m2 + rnd, (-1 if e else 0), (1 << (e - 1) if e else 0), e
    top = bound * m2 + rnd  # |a| <= top for every |acc| <= bound
    if raw_bound * m2 > I64_LIMIT or abs(add1) > I64_LIMIT or top > I64_LIMIT:
        return None
    v_hi, v_lo = top >> shift1, (-bound * m2 + rnd) >> shift1  # v is non-decreasing in acc
    if v_lo - 1 < I32_MIN or v_hi + add2 > I32_MAX:
        return None
    out_lo, out_hi = (v_lo - 1 + add2) >> shift2, (v_hi + add2) >> shift2
    return (m2, add1, shift1, mask, add2, shift2), (out_lo, out_hi)


def _float_stage(
    mult: list[int],
    add1: list[int],
    shift1: list[int],
    off: Array,
    bound: Array,
    raw_bound: Array,
) -> tuple[Array, Array] | None:
    """(M' / 2^s1, add1 / 2^s1) as float64 where every channel's R * M', |add1| and
    |a| <= bound * M' + rounding term stay below 2^53; None otherwise."""
    for c, (m2, a1) in enumerate(zip(mult, add1, strict=True)):
        rnd = a1 - int(off[c]) * m2  # the rounding term folded into add1
        top = int(bound[c]) * m2 + rnd
        if max(int(raw_bound[c]) * m2, m2, abs(a1), top) >= F64_EXACT:
            return None
    fm = [math.ldexp(float(m2), -k) for m2, k in zip(mult, shift1, strict=True)]
    fa = [math.ldexp(float(a1), -k) for a1, k in zip(add1, shift1, strict=True)]
    return np.array(fm, np.float64), np.array(fa, np.float64)


def _floor_stage(
    cols: list[tuple[int, ...]],
    z_out: int,
    act: tuple[int, int],
    off: Array,
    bound: Array,
    raw_bound: Array,
) -> tuple[Array, Array] | None:
    """(M' / 2^k, A / 2^k) of the one-floor form (module docstring), or None where a channel
    is neither constant nor exact in float64. `cols`: `_channel`'s constants."""
    clamp = (act[0] + 128, act[1] + 128)
    gm, ga = [], []
    for c, (m2, add1, shift1, _, add2, shift2) in enumerate(cols):
        k, o = shift1 + shift2, int(off[c])
        rest = add1 - o * m2 + (add2 << shift1) + ((z_out + 128) << k)
        b, r = int(bound[c]), int(raw_bound[c])
        ends = {_clamped((acc * m2 + rest) >> k, clamp) for acc in (max(o - r, -b), min(o + r, b))}
        if len(ends) == 1:  # every possible acc gives this code: y = 0 * r + code
            gm.append(0.0)
            ga.append(float(ends.pop()))
            continue
        top = b * m2 + rest
        if max(r * m2, m2, abs(o * m2 + rest)) >= F64_EXACT or (top >= F64_EXACT and k > K_SIDE):
            return None
        gm.append(math.ldexp(float(m2), -k))
        ga.append(math.ldexp(float(o * m2 + rest), -k))
    return np.array(gm, np.float64), np.array(ga, np.float64)


def _clamped(v: int, bounds: tuple[int, int]) -> int:
    return min(max(v, bounds[0]), bounds[1])


def _operand(values: list[int], dtype: Any) -> Operand:
    """One int where every channel has the same value (a scalar operand is a faster pass)."""
    return values[0] if values and len(set(values)) == 1 else np.array(values, dtype)


def block_rows(row_len: int, width: int, target: int = 1 << 16) -> int:
    """How many output rows (each `row_len` pixels of `width` values) make one block of about
    `target` values: small enough that a block's buffers stay in the core's cache."""
    return max(1, target // max(1, row_len * width))
