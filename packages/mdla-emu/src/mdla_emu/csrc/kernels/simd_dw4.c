/*
 * simd_dw4.c: the multiplier-1 DEPTHWISE_CONV_2D row of simd.h with AVX-512 VNNI, four taps per
 * vpdpbusd (emu_dw4_*), requantized in registers. Its exactness is beside its declaration.
 *
 * Layout of one block of 64 channels and one group of 4 taps (t = 4g + j): the four input rows
 * of 64 bytes are interleaved by unpacklo/hi_epi8 then unpacklo/hi_epi16, which leaves in
 * register k (k < 4), int32 lane l (l < 16), the bytes of taps 4g..4g+3 of channel
 *   ch(k, l) = 16 * (l / 4) + 4 * k + l % 4
 * (each 128-bit quarter L = l / 4 holds channels 16L..16L+15). The packed weights, the initial
 * sums and the requantization constants are stored per lane in that order (the int64 ones per
 * register as its 8 even lanes' qwords, then its 8 odd lanes'); after the requantization
 * packs_epi32(r0, r1) and packs_epi32(r2, r3), then packs_epi16 of the two, put the 64 codes
 * back in channel order (per quarter: channels 16L+0..7, then 16L+8..15); the output zero point
 * is added between the packs and the clamp is on the int8 codes (simd.h says why that is exact).
 *
 * Fewer than 64 channels that divide 64 at a column stride of 1 (k->pix = 64 / c > 1: the
 * 32- and 16-channel layers): lane channel e holds channel e % c, so one block is pix adjacent
 * output pixels. Pixel ox + q's tap t lies q c bytes after pixel ox's (the window moves one
 * input pixel per output pixel), so the 64 bytes at pixel ox's tap row are tap t of all pix
 * pixels, in the order their outputs are stored; this runs where all pix windows are interior.
 */
#include <stdlib.h>
#include <string.h>

#include "simd.h"
#include "simd_dw4_rows.h"

/* The channel of lane l of register k (see the header). */
static int32_t dw4_channel(int32_t k, int32_t l) { return 16 * (l / 4) + 4 * k + l % 4; }

/* The channel of lane l of register k in block b: with pix pixels per block, lane channel
 * modulo c (the block's pixels share the constants). */
static int32_t dw4_lane_channel(const EmuDw4 *k, const EmuDwGeom *g, int32_t b, int32_t r,
                                int32_t l) {
    const int32_t c = 64 * b + dw4_channel(r, l);
    return k->pix > 1 ? c % g->c : c;
}

static void dw4_pack_weights(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t b = 0; b < k->blocks; b++)
        for (int32_t gr = 0; gr < k->groups; gr++)
            for (int32_t r = 0; r < 4; r++)
                for (int32_t l = 0; l < 16; l++)
                    for (int32_t j = 0; j < 4; j++) {
                        const int32_t c = dw4_lane_channel(k, g, b, r, l), t = 4 * gr + j;
                        const size_t at = (((size_t)b * k->groups + gr) * 64 + 16 * r + l) * 4;
                        k->w[at + j] = c < g->c && t < taps ? w[(size_t)t * g->c + c] : 0;
                    }
}

/* Lane e's requantization constants (simd.h): m, and in its int64 array (the even or the odd
 * lanes' of its register, qword q) 2^30 + 2^(30 + r) (2^30 for r = 0), 31 + r, and the bit of
 * the r >= 1 lanes. */
static void dw4_pack_rq(EmuDw4 *k, size_t e, int32_t c, const EmuDwRq *rq) {
    const int32_t r = rq->right[c];
    const size_t q = e / 2;
    int64_t *round = e % 2 ? k->round_o : k->round_e, *shift = e % 2 ? k->shift_o : k->shift_e;
    uint8_t *pos = k->pos + e / 16 * 2 + e % 2;
    k->left[e] = rq->left[c];
    k->mult[e] = rq->mult[c];
    if (e % 2) k->mult_o[q] = rq->mult[c]; /* the low dword vpmuldq reads */
    round[q] = emu_rq_round(r);
    shift[q] = 31 + r;
    if (r > 0) *pos |= (uint8_t)(1u << (q % 8));
    k->shifted = k->shifted || rq->left[c] != 0;
}

/* Per-lane constants; the channels past c get zeros (their codes are never stored). */
static void dw4_pack_lanes(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z,
                           const EmuDwRq *rq) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t b = 0; b < k->blocks; b++)
        for (int32_t r = 0; r < 4; r++)
            for (int32_t l = 0; l < 16; l++) {
                const int32_t c = dw4_lane_channel(k, g, b, r, l);
                const size_t e = (size_t)64 * b + 16 * r + l;
                if (c >= g->c) continue; /* zeros */
                int32_t sum = 0;
                for (int32_t t = 0; t < taps; t++) sum += w[(size_t)t * g->c + c];
                k->init[e] = rq->bias[c] - (128 + z) * sum;
                dw4_pack_rq(k, e, c, rq);
            }
}

/* `n` zeroed bytes on a 64-byte boundary (n a multiple of 64), or NULL. */
static void *dw4_zeros(size_t n) {
    void *p = aligned_alloc(64, n);
    if (p != NULL) memset(p, 0, n);
    return p;
}

int emu_dw4_pack(EmuDw4 *k, const EmuDwGeom *g, const int8_t *w, int32_t z, const EmuDwRq *rq) {
    memset(k, 0, sizeof *k);
    k->blocks = (g->c + 63) / 64;
    k->pix = g->stride_w == 1 && g->c < 64 && 64 % g->c == 0 ? 64 / g->c : 1;
    k->groups = (g->kh * g->kw + 3) / 4;
    const size_t lanes = (size_t)k->blocks * 64;
    k->w = malloc(lanes * k->groups * 4);
    k->init = dw4_zeros(3 * lanes * sizeof(int32_t));
    k->mult_o = dw4_zeros(5 * lanes / 2 * sizeof(int64_t));
    k->pos = calloc(lanes / 8, 1);
    k->zrow = malloc(lanes);
    k->off = calloc((size_t)4 * k->groups, sizeof *k->off); /* past kh * kw: 0 (zero weights) */
    if (!k->w || !k->init || !k->mult_o || !k->pos || !k->zrow || !k->off) return -1;
    k->left = k->init + lanes;
    k->mult = k->left + lanes;
    k->round_e = k->mult_o + lanes / 2;
    k->round_o = k->round_e + lanes / 2;
    k->shift_e = k->round_o + lanes / 2;
    k->shift_o = k->shift_e + lanes / 2;
    memset(k->zrow, (uint8_t)(int8_t)z, lanes);
    emu_dw4_offsets(k, g);
    dw4_pack_weights(k, g, w);
    dw4_pack_lanes(k, g, w, z, rq);
    k->z_out = rq->z;
    k->lo = rq->lo;
    k->hi = rq->hi;
    return 0;
}

void emu_dw4_free(EmuDw4 *k) {
    free(k->w);
    free(k->init);
    free(k->mult_o);
    free(k->pos);
    free(k->zrow);
    free(k->off);
    memset(k, 0, sizeof *k);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd_x86.h"

#define EMU_T_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

static bool dw4_cpu;
__attribute__((constructor)) static void dw4_detect(void) {
    __builtin_cpu_init();
    dw4_cpu = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

bool emu_dw4_ready(void) { return dw4_cpu && emu_isa() == EMU_ISA_AVX512; }

/* The 64 (masked: m) codes at `row`, as u = x + 128 (uint8). */
EMU_T_VNNI static inline __attribute__((always_inline)) __m512i dw4_load(const int8_t *row,
                                                                         __mmask64 m, bool all) {
    const __m512i x =
        all ? _mm512_loadu_si512((const void *)row) : _mm512_maskz_loadu_epi8(m, row);
    return _mm512_xor_si512(x, _mm512_set1_epi8((char)0x80));
}

/* Register r's 64 weight bytes of a group's 256. */
EMU_T_VNNI static inline __m512i dw4_w(const int8_t *w, int r) {
    return _mm512_loadu_si512((const void *)(w + 64 * r));
}

/* 16 lanes of sums (from lane e of the block's constants) to t = RDBPOT(SRDHM(.)) in int32
 * lanes (simd.h), before the output zero point and the clamp. */
EMU_T_VNNI static inline __attribute__((always_inline)) __m512i dw4_requant(const EmuDw4 *k,
                                                                            size_t e, __m512i s) {
    const __m512i v =
        k->shifted ? _mm512_sllv_epi32(s, _mm512_load_si512((const void *)(k->left + e))) : s;
    const size_t q = e / 2;
    const EmuRqHalf he = {_mm512_load_si512((const void *)(k->round_e + q)),
                          _mm512_load_si512((const void *)(k->shift_e + q)), k->pos[e / 8]};
    const EmuRqHalf ho = {_mm512_load_si512((const void *)(k->round_o + q)),
                          _mm512_load_si512((const void *)(k->shift_o + q)), k->pos[e / 8 + 1]};
    return emu_rq16(v, _mm512_load_si512((const void *)(k->mult + e)),
                    _mm512_load_si512((const void *)(k->mult_o + q)), he, ho,
                    _mm512_set1_epi64(INT64_C(1) << 31));
}

/* One block of 64 channels from byte `at` of the pixel whose tap t's row is rows[t], or
 * top + k->off[t] when `top` is not NULL (an interior pixel: no row list written and read back
 * per pixel): the sums in registers (see the header for the lane order), requantized and
 * stored to out[0..64) (masked: m). */
EMU_T_VNNI static inline __attribute__((always_inline)) void
dw4_block(const EmuDw4 *k, const int8_t *const *rows, const int8_t *top, int32_t b, __mmask64 m,
          bool all, int8_t *out) {
    const size_t at = (size_t)64 * b;
    /* four named registers: an array of them went through the stack (gcc 13) */
    __m512i s0 = _mm512_loadu_si512((const void *)(k->init + at)),
            s1 = _mm512_loadu_si512((const void *)(k->init + at + 16)),
            s2 = _mm512_loadu_si512((const void *)(k->init + at + 32)),
            s3 = _mm512_loadu_si512((const void *)(k->init + at + 48));
    const int8_t *w = k->w + at * k->groups * 4;
    for (int32_t gr = 0; gr < k->groups; gr++, w += 256) {
        const ptrdiff_t *o = k->off + 4 * gr;
        const int8_t *const *r = rows + 4 * gr;
        const __m512i x0 = dw4_load((top ? top + o[0] : r[0]) + at, m, all),
                      x1 = dw4_load((top ? top + o[1] : r[1]) + at, m, all),
                      x2 = dw4_load((top ? top + o[2] : r[2]) + at, m, all),
                      x3 = dw4_load((top ? top + o[3] : r[3]) + at, m, all);
        const __m512i lo01 = _mm512_unpacklo_epi8(x0, x1), hi01 = _mm512_unpackhi_epi8(x0, x1),
                      lo23 = _mm512_unpacklo_epi8(x2, x3), hi23 = _mm512_unpackhi_epi8(x2, x3);
        s0 = _mm512_dpbusd_epi32(s0, _mm512_unpacklo_epi16(lo01, lo23), dw4_w(w, 0));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_unpackhi_epi16(lo01, lo23), dw4_w(w, 1));
        s2 = _mm512_dpbusd_epi32(s2, _mm512_unpacklo_epi16(hi01, hi23), dw4_w(w, 2));
        s3 = _mm512_dpbusd_epi32(s3, _mm512_unpackhi_epi16(hi01, hi23), dw4_w(w, 3));
    }
    s0 = dw4_requant(k, at, s0);
    s1 = dw4_requant(k, at + 16, s1);
    s2 = dw4_requant(k, at + 32, s2);
    s3 = dw4_requant(k, at + 48, s3);
    const __m512i vz = _mm512_set1_epi16((short)k->z_out);
    __m512i codes = _mm512_packs_epi16(_mm512_adds_epi16(_mm512_packs_epi32(s0, s1), vz),
                                       _mm512_adds_epi16(_mm512_packs_epi32(s2, s3), vz));
    codes = _mm512_min_epi8(_mm512_max_epi8(codes, _mm512_set1_epi8((char)k->lo)),
                            _mm512_set1_epi8((char)k->hi));
    if (all)
        _mm512_storeu_si512((void *)out, codes);
    else
        _mm512_mask_storeu_epi8(out, m, codes);
}

EMU_T_VNNI static inline __attribute__((always_inline)) void
dw4_pixel(const EmuDw4 *k, int32_t c, const int8_t *const *rows, const int8_t *top,
          int8_t *out) {
    int32_t b = 0;
    for (; 64 * (b + 1) <= c; b++)
        dw4_block(k, rows, top, b, ~(__mmask64)0, true, out + 64 * b);
    if (64 * b < c)
        dw4_block(k, rows, top, b, ((__mmask64)1 << (c - 64 * b)) - 1, false, out + 64 * b);
}

EMU_T_VNNI void emu_dw4_row(const EmuDw4 *kp, const EmuDwGeom *g, const int8_t *image,
                            int32_t oy, int8_t *out, const int8_t **rows) {
    /* a local copy: the stores through out and rows cannot change it, so its fields and the
     * vectors made of them stay in registers across the pixels */
    const EmuDw4 kc = *kp, *k = &kc;
    int32_t lo, hi;
    emu_dw_columns(g, &lo, &hi);
    const int32_t y0 = oy * g->stride_h - g->pad_top;
    const bool inside = y0 >= 0 && y0 + (g->kh - 1) * g->dil_h < g->h;
    for (int32_t ox = 0; ox < g->ow;) {
        int8_t *o = out + (size_t)ox * g->c;
        if (!inside || ox < lo || ox >= hi) {
            emu_dw4_rows(k, g, image, oy, ox, false, rows);
            dw4_pixel(k, g->c, rows, NULL, o);
            ox++;
            continue;
        }
        /* the window's top-left input pixel, inside the image */
        const int8_t *top =
            image + ((size_t)y0 * g->w + (size_t)(ox * g->stride_w - g->pad_left)) * g->c;
        if (k->pix > 1 && ox + k->pix <= hi) { /* pix pixels' taps are adjacent */
            dw4_block(k, rows, top, 0, ~(__mmask64)0, true, o);
            ox += k->pix;
        } else {
            dw4_pixel(k, g->c, rows, top, o);
            ox++;
        }
    }
}
#else
bool emu_dw4_ready(void) { return false; }

void emu_dw4_row(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image, int32_t oy,
                 int8_t *out, const int8_t **rows) {
    (void)k, (void)g, (void)image, (void)oy, (void)out, (void)rows;
    abort(); /* unreachable: emu_dw4_ready() is false here */
}
#endif
