/*
 * simd.h: the hand-vectorized kernels (x86-64 intrinsics) beside the portable C they replace,
 * and the run-time choice between them.
 *
 * emu_isa() is what a kernel's prepare reads: the best instruction set this CPU has (cpuid),
 * lowered by the environment, so the tests run every path on one machine:
 *   MDLA_EMU_PORTABLE=1                    the portable C (every hand-written kernel off)
 *   MDLA_EMU_ISA=portable|avx2|avx512      at most that one (never above what the CPU has)
 * On aarch64 it is EMU_ISA_NEON (simd_neon.h: the same kernels in NEON), or EMU_ISA_PORTABLE
 * under MDLA_EMU_PORTABLE=1 or MDLA_EMU_ISA=portable; on other machines (other compilers) it is
 * EMU_ISA_PORTABLE: the C path, which the compiler vectorizes by itself.
 */
#ifndef MDLA_EMU_SIMD_H
#define MDLA_EMU_SIMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { EMU_ISA_PORTABLE = 0, EMU_ISA_AVX2 = 1, EMU_ISA_AVX512 = 2, EMU_ISA_NEON = 3 };

int emu_isa(void);

/* The narrow requantization of kernels.h (requant_narrow in kernel_common.c), `n` values:
 *   v = (acc[e] + bias[e]) * 2^left[e];  h = SRDHM(v, mult[e]);
 *   t = RDBPOT(h, right[e]) (mask = 2^right - 1);  out[e] = clamp(clamp(t, +-2^16) + z, lo, hi)
 * in int32 lanes, the SRDHM product in int64 lanes (even and odd lanes apart). Only for
 * EMU_ISA_AVX2 / EMU_ISA_AVX512 (as emu_isa() returned); the same integers as the C. */
typedef struct {
    const int32_t *bias, *left, *mult, *right, *mask; /* per element e */
    int32_t z, lo, hi;
} EmuNarrow;
void emu_requant_narrow_avx2(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n);
void emu_requant_narrow_avx512(const EmuNarrow *k, const int32_t *acc, int8_t *out, int32_t n);
/* emu_requant_narrow_avx2's outputs in fewer steps, for a pipeline whose every channel leaves
 * room (kernels.h EmuRequant.nudge32): with h = SRDHM(v, mult) as there and e = right,
 *   RDBPOT(h, e) + z = (h + nudge - [h < 0] neg) >> e   (arithmetic shift, int32),
 *   nudge = (e >= 1 ? 2^(e-1) : 0) + z 2^e,  neg = 1 for e >= 1, else 0.
 * For e >= 1 write h = q 2^e + r (0 <= r < 2^e): the shift gives q + z + [r >= 2^(e-1) + [h < 0]]
 * (z 2^e is a whole multiple), and RDBPOT adds 1 to q exactly when r > (mask >> 1) + [h < 0],
 * the same condition (mask >> 1 = 2^(e-1) - 1); for e = 0 it is h + z. Exact when the int32 sum
 * cannot overflow: prepare keeps this form only where |h| + 2^e (|z| + 1) + 1 < 2^31 for the
 * channel's bound of |h|. That is t + z, the unclamped output; it goes through the saturating
 * packs to int16 and int8 and is clamped to [lo, hi] in int8: both saturations are monotone
 * and leave [lo, hi] (inside [-128, 127]) as it is, so the result is clamp(t + z, lo, hi), which
 * is requant_narrow's clamp(clamp(t, +-2^16) + z, lo, hi) (|z| <= 128). This drops the
 * remainder, threshold and compare of RDBPOT and the int32 clamp; `left` NULL (every channel's
 * left shift 0) drops the shift and its load, `neg` NULL (every e >= 1) the mask of [h < 0].
 * Only for EMU_ISA_AVX2 (as emu_isa() returned). */
typedef struct {
    /* per element; mult has one more (read as the odd lanes' one element on); neg 0 or -1 */
    const int32_t *bias, *left, *mult, *right, *nudge, *neg;
    int32_t lo, hi;
} EmuNudge;
void emu_requant_nudge_avx2(const EmuNudge *k, const int32_t *acc, int8_t *out, int32_t n);

/* DEPTHWISE_CONV_2D with multiplier 1 (k_depthwise_conv_2d.c), one output row:
 *   acc[ox][c] = sum over the taps (i, j) inside the image of
 *                filter[i * kw + j][c] * (image[iy][ix][c] - z),
 *   iy = oy * stride_h + i * dil_h - pad_top,  ix = ox * stride_w + j * dil_w - pad_left
 * for ox < ow, c < c. Per output pixel the taps inside the image are listed once; then, per
 * block of channels (16 or 8 int32 lanes), every tap is added into one register, which is
 * stored once. Exact: |x - z| <= 255, |w| <= 127 and at most 2^16 taps (prepare), so each
 * int32 lane holds the true sum, whatever the order of the additions. Each product is one
 * vpmaddwd: the lane x - z (int32, so its two int16 halves are x - z, which fits int16, and
 * its sign) against the filter's lane (w as int16, then a zero int16) adds (x - z) * w + 0. */
/* The geometry both depthwise rows (int8 and 16x8) share: the image [h][w][c], the window
 * (kh, kw, strides, dilations, top and left pads) and the output row's width ow. */
typedef struct {
    int32_t h, w, c, kh, kw, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, ow;
} EmuDwGeom;
typedef struct {
    const int8_t *image;   /* [h][w][c] of one batch item */
    const int32_t *filter; /* [kh * kw][c]: lane (int32)(uint16_t)w, w's int16 in the low half */
    EmuDwGeom g;
    int32_t z;
    /* [c]: -z * sum over the kh * kw taps of w[t][c] (int32: |.| <= 128 * 127 * 2^16 < 2^31),
     * for pixels whose every tap lies inside the image (AVX-512: no x - z per tap); or NULL */
    const int32_t *zw;
} EmuDwRow;
/* The taps of output pixel (oy, ox) inside the image, as pairs (input offset, filter offset)
 * in `taps` (2 * kh * kw int32); their count is returned. Both rows' (int8 and 16x8). */
int32_t emu_dw_taps(const EmuDwGeom *g, int32_t oy, int32_t ox, int32_t *taps);
/* The same int32 sums in AVX2 two taps per vpmaddwd (simd_dw.c; emu_isa() at least AVX2), from
 * the codes x as they are:
 *   acc[ox][c] = zw[c] + sum over the taps t (padded to even) of x_t[c] * w_t[c]
 * where x_t is the input pixel tap t reads, or a row of zero points z when it lies outside the
 * image (or t is the pad tap past kh * kw, whose w is 0), and zw = -z * sum_t w_t: an outside
 * tap adds z * w - z * w = 0 and an inside one (x - z) * w: the sums above. Per
 * pair of taps the two rows' bytes are interleaved and widened to int16 pairs (x_a, x_b), and
 * vpmaddwd against (w_a, w_b) adds x_a w_a + x_b w_b to the channel's int32 lane. Exact:
 * |x| <= 128 and |w| <= 127, so each product and the pair's sum fit (|.| <= 2 * 2^14), and the
 * int32 additions wrap modulo 2^32 while the final value, the true acc, fits int32 (the
 * header's bound), so the lane ends on it whatever the order. `rows` holds kh * kw + 1
 * pointers. */
typedef struct {
    const int8_t *image;  /* [h][w][c] of one batch item */
    const int16_t *pairs; /* [(kh * kw + 1) / 2][c][2]: taps 2p and 2p + 1's w (emu_dw2_pack) */
    const int32_t *zw;    /* [c]: -z * sum over the kh * kw taps of w[t][c] */
    const int8_t *zrow;   /* [c] codes z */
    EmuDwGeom g;
} EmuDw2Row;
/* `pairs` ((taps + 1) / 2 * c * 2 int16) from w[taps][c], 0 for the pad tap. */
void emu_dw2_pack(const int8_t *w, int32_t taps, int32_t c, int16_t *pairs);
void emu_dw2_row_avx2(const EmuDw2Row *d, int32_t oy, int32_t *acc, const int8_t **rows);
void emu_dw_row_avx512(const EmuDwRow *d, int32_t oy, int32_t *acc, int32_t *taps);
/* emu_dw_row_avx512 with the narrow requantization (kernels.h EmuRequant.narrow) on the
 * registers: out[ox][c] = requant_narrow((acc[ox][c] + bias[c]) * 2^left[c]), int8,
 * no int32 row (the same integers: simd.c's header). */
typedef struct {
    const int32_t *bias, *left, *mult, *right, *mask; /* per channel */
    int32_t z, lo, hi;
} EmuDwRq;
void emu_dw_row_rq_avx512(const EmuDwRow *d, const EmuDwRq *rq, int32_t oy, int8_t *out,
                          int32_t *taps);
/* The output columns [*lo, *hi) whose windows lie inside the image across (every ix of every
 * tap); empty (*lo == *hi) when there is none. */
void emu_dw_columns(const EmuDwGeom *g, int32_t *lo, int32_t *hi);

/* emu_dw_row_rq_avx512's output with AVX-512 VNNI, four taps per vpdpbusd (simd_dw4.c):
 *   out[ox][c] = requant_narrow(init[c] + sum over 4 * groups taps t of u_t[c] * w_t[c])
 *   u_t = x_t + 128 (uint8: the code's sign bit flipped), init = bias - (128 + z) * sum_t w_t,
 * where a tap outside the image reads a row of zero points (x = z) and the taps past kh * kw
 * have w = 0, so each adds (x - z) * w or 0: the sum is sum over the taps inside the image of
 * (x - z) * w, as emu_dw_row_rq_avx512's. Exact: the true value of init + the sum is
 * bias + acc, which the narrow bound (kernels.h EmuRequant.narrow: 255 * sum |w| + |bias| <
 * 2^31) keeps inside int32, so the wrapping int32 additions of vpdpbusd (4 products of at most
 * 255 * 128 each) end on it whatever the order.
 * The requantization is requant_narrow's integers in fewer steps. With v = (bias + acc) * 2^left
 * and p = v * m in int64 (|p| < 2^62), requant_narrow's h = SRDHM = floor((p + 2^30) / 2^31)
 * exactly, then for r = right >= 1 RDBPOT(h, r) = floor((h + 2^(r-1) - [h < 0]) / 2^r) (write
 * h = q 2^r + rem: both add 1 to q exactly when rem > 2^(r-1) - 1 + [h < 0]); nested floors
 * of integer divisions merge, so t = floor((p + 2^30 + 2^(30+r) - 2^31 [h < 0]) / 2^(31+r)), one
 * int64 add, masked subtract and arithmetic shift per lane (r <= 31, arith.h: |.| < 2^63),
 * where h < 0 iff p + 2^30 < 0, i.e. p < -2^30 (one compare). For r = 0, t = h: the round
 * constant is 2^30, the shift 31 and no subtract. t fits int32 (|h| < 2^31). The output zero
 * point and the clamp come after packing to int16 and int8, with saturating adds and packs:
 * sat8(sat16(sat16(t) + z)) is monotone in t and equals t + z wherever lo <= t + z <= hi
 * (|t| <= 255 there), so clamped to [lo, hi] it is clamp(t + z, lo, hi), requant_narrow's.
 * Built by emu_dw4_pack at prepare; emu_dw4_row runs only when emu_dw4_ready() (AVX-512 VNNI,
 * emu_isa() AVX-512). `rows` holds 4 * groups pointers. */
typedef struct {
    int8_t *w;       /* [blocks][groups][4 registers][16 lanes][4 taps] (simd_dw4.c's order) */
    int32_t *init;   /* [blocks * 64] in lane order (64-byte aligned); then left, mult */
    int32_t *left, *mult;
    int32_t *right, *mask; /* emu_dw4_neon_pack's, after its mult (simd_neon.h); NULL here */
    /* [blocks * 32] each, a register's 8 even then its 8 odd lanes' qwords (64-byte aligned):
     * the odd lanes' m (low dword), then round_e, round_o: 2^30 + 2^(30 + r) (2^30 for r = 0),
     * shift_e, shift_o: 31 + r */
    int64_t *mult_o, *round_e, *round_o, *shift_e, *shift_o;
    uint8_t *pos;    /* [blocks * 8]: per register, its even then odd lanes' bits of r >= 1 */
    int8_t *zrow;    /* [blocks * 64] zero points: the row of a tap outside the image */
    ptrdiff_t *off;  /* [kh * kw]: a tap's bytes from its window's top-left pixel (emu_dw4_pack:
                      * [4 * groups], 0 past kh * kw, read against zero weights) */
    int32_t blocks, groups, z_out, lo, hi;
    int32_t pix;     /* output pixels per block (simd_dw4.c: 64 / c for c | 64, stride_w 1;
                      * simd_dw4_neon.c: 16 / c for c | 16) */
    bool shifted;    /* some left is not 0 */
} EmuDw4;
/* The round constant of that int64 form for r = right (0 <= r <= 31): 2^30 + 2^(30 + r), 2^30
 * for r = 0 (emu_dw4_pack, emu_add_vec_pack; gemm_amx.c builds it in vector lanes). */
static inline int64_t emu_rq_round(int32_t r) {
    return (INT64_C(1) << 30) + (r > 0 ? INT64_C(1) << (30 + r) : 0);
}
/* 0, or -1 when out of memory (then emu_dw4_free what was allocated). */
int emu_dw4_pack(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z, const EmuDwRq *rq);
void emu_dw4_free(EmuDw4 *k);
bool emu_dw4_ready(void);
void emu_dw4_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image, int32_t oy,
                 int8_t *out, const int8_t **rows);

/* The 16x8 DEPTHWISE_CONV_2D with multiplier 1 (conv16.c), one output row of int32 sums:
 *   acc[ox][c] = sum over the taps (i, j) inside the image of
 *                filter[i * kw + j][c] * image[iy][ix][c]     (zero point 0: a tap outside adds 0)
 * with iy, ix as EmuDwRow's (the same EmuDwGeom). Exact in int32: |x| <= 2^15, |w| <= 2^7
 * (int8 widened to int16) and at most 256 taps (the caller's condition), so every partial sum
 * is at most 2^30 whatever the order; vpmaddwd adds two taps' products of one channel
 * (|.| <= 2^23) in one int32 lane.
 * emu_dw16_row is the portable C; emu_dw16_row_avx2 runs only when emu_isa() is AVX2 or AVX-512.
 * `taps` holds 2 * kh * kw int32. */
typedef struct {
    const int16_t *image;  /* [h][w][c] of one batch item */
    const int16_t *filter; /* [kh * kw][c] */
    EmuDwGeom g;
} EmuDw16Row;
void emu_dw16_row(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps);
void emu_dw16_row_avx2(const EmuDw16Row *d, int32_t oy, int32_t *acc, int32_t *taps);

/* MUL (k_mul.c) in double rounding with a shift s <= 0, n elements:
 *   out[i] = clamp(RDBPOT(SRDHM((a[i * a_step] - z1) * (b[i * b_step] - z2), mult), right)
 *                  + z, lo, hi),  mask = 2^right - 1,  steps 0 or 1
 * the narrow requantization above on the product, which fits int32 (|x - z| <= 255), so the
 * same integers as the table of mul_one (x * 2^0 needs no narrowing, and the values are far
 * from any int32 bound, so the accumulator fact changes nothing).
 * The AVX-512 kernel takes 64 codes a step in int16 lanes: x - z fits int16, vpmullw and
 * vpmulhw give the low and high halves of the int32 product p (|p| <= 255 * 255 < 2^16), and
 * unpacking them pairs the halves into int32 lanes (the packs after undo the unpacks' order
 * within each 128 bits; a qword permute undoes the second pack's). With the shift e = right
 * the same in every lane and h = SRDHM(p, mult) (|h| <= |p| < 2^16: mult < 2^31):
 *   RDBPOT(h, e) + z = (h + 2^(e-1) + z * 2^e - [h < 0]) >> e   for e >= 1, h + z for e = 0
 * (h = q 2^e + r, 0 <= r < 2^e: the shift gives q + z + [r >= 2^(e-1) + [h < 0]], which is
 * RDBPOT's q + [r > (mask >> 1) + [h < 0]]). For e >= 17, |h| < 2^(e-1), so RDBPOT is 0 and
 * e = 17 gives that 0 too: e is capped at 17, so z * 2^e and the sum stay within int32. Then
 * int32 -> int16 -> int8 with signed saturation, and the clamp to [lo, hi] in int8: both
 * saturations are monotone and fix [-128, 127] (lo and hi lie inside), so the clamp of the
 * saturated value is the clamp of t + z. */
typedef struct {
    int32_t z1, z2, mult, right, mask, z, lo, hi;
} EmuMulNarrow;
void emu_mul_narrow_avx2(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                         uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out);
void emu_mul_narrow_avx512(const EmuMulNarrow *k, const int8_t *a, const int8_t *b,
                           uint32_t a_step, uint32_t b_step, uint32_t n, int8_t *out);

/* The int16 GEMM of the portable path (kernels.h emu_gemm_s16_blocked: rows a multiple of
 * EMU_GEMM_MR, depth even, rows of `a` `depth` apart) in AVX2 for CPUs without AVX-512 VNNI:
 *   out[p][o] = sum_k a[p][k] * w[o][k]   for p < rows, o < cols; out rows `ldo` apart
 * The filter is packed once (emu_gemm_s16_avx2_pack) in panels of 8 columns: per pair of k,
 * 8 int32 lanes each holding (w[o][k], w[o][k+1]) as two int16. One vpmaddwd of that vector
 * with the broadcast pair (a[p][k], a[p][k+1]) adds a[k] w[k] + a[k+1] w[k+1] to column o's
 * int32 lane: exact, every term an integer, |a| <= 255, |w| <= 127, and the sum's bound
 * (depth * 255 * 128 < 2^31, kernels.h) holds for every partial sum too. */
size_t emu_gemm_s16_avx2_size(int32_t cols, int32_t depth); /* int16 elements of the pack */
void emu_gemm_s16_avx2_pack(const int8_t *w, int32_t cols, int32_t wdepth, int32_t depth,
                            int16_t *packed);
void emu_gemm_s16_avx2(const int16_t *a, const int16_t *packed, int32_t *out, int32_t rows,
                       int32_t cols, int32_t depth, int32_t ldo);

/* A 256-entry int8 table applied to n codes: y[i] = table[x[i] + 128] (kernels.h EmuLut).
 * emu_lut_vbmi_ready(): emu_isa() is EMU_ISA_AVX512 and the CPU has AVX512-VBMI, whose
 * vpermi2b looks 64 bytes up in a 128-byte table at once: the index x + 128 is x ^ 0x80; its
 * low 7 bits pick a byte of the low or the high 128 entries, its top bit which of the two. */
bool emu_lut_vbmi_ready(void);
void emu_lut_vbmi(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n);
/* The same lookup in AVX2 (emu_isa() at least EMU_ISA_AVX2), 32 codes a step: vpshufb looks up
 * 16-byte tables only, so the 256 entries are 16 rows of 16. With u = x + 128 = x ^ 0x80, row j
 * looked up at u & 15 gives table[16 j + (u & 15)] in every lane (index < 16: no lane zeroed);
 * then a tree of byte blends keeps, lane by lane, the row whose number is u's high nibble:
 * between rows 2i and 2i + 1 by u's bit 4, between those pairs by bit 5, then 6, then 7
 * (vpblendvb reads each byte's top bit: u shifted left by 3, 2, 1, 0 puts bit 4, 5, 6, 7
 * there, the shift's carries from the byte below landing in the low bits). The lane keeps
 * table[u]. */
void emu_lut_avx2(const int8_t *table, const int8_t *x, int8_t *y, uint64_t n);

/* int8 ADD / SUB (k_add.c) without its 256 x 256 table, 64 codes a step (simd_add.c):
 *   out[i] = clamp(MBQM(A[x[i] + 128] +- B[y[i] + 128], m, s) + z, lo, hi)
 * A, B the int32 values k_add.c tabulates per code (|.| < 2^29, so the sum fits int32, and
 * -B too), stored as four byte planes each (SUB's side negated). With s <= 0 (r = -s <= 31)
 * and p = (A +- B) * m in int64 (|p| < 2^61): MBQM in double rounding is RDBPOT(SRDHM(.), r)
 * with no left shift, which is t = (p + 2^30 + 2^(30 + r) [r >= 1] - 2^31 [p < -2^30,
 * r >= 1]) >> (31 + r) (emu_dw4_row's proof above); in single rounding it is
 * (p + 2^(30 + r)) >> (31 + r) by definition (arith.h). Neither narrows or wraps anything: x
 * fits int32, |t| < 2^30 and t + z fits int32, so the accumulator mode changes nothing. The
 * zero point and the clamp come after the saturating packs, exact as emu_dw4_row's. Steps
 * are 0 (one code for every element) or 1.
 * emu_add_vec_pack: false (nothing to use) when s > 0 or s < -31 (r > 31), m is not in
 * [0, 2^31) or a value is out of those bounds. */
typedef struct {
    int8_t planes[2][4][256]; /* [A or +-B][byte j][code + 128] */
    int64_t mult, round, corr, shift;
    int32_t z, lo, hi;
} EmuAddVec;
bool emu_add_vec_pack(EmuAddVec *k, const int64_t *a, const int64_t *b, int sign, int64_t m,
                      int s, int rounding, int32_t z, int32_t lo, int32_t hi);
bool emu_add_vec_ready(void); /* emu_lut_vbmi_ready() */
void emu_add_vec(const EmuAddVec *k, const int8_t *a, const int8_t *b, uint32_t a_step,
                 uint32_t b_step, uint32_t n, int8_t *out);

#endif /* MDLA_EMU_SIMD_H */
