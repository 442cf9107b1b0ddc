/*
 * simd_dw4_rows.h: the tap rows of the four-tap depthwise (EmuDw4, simd.h), which its x86 row
 * (simd_dw4.c) and its aarch64 twin (simd_dw4_neon.c) both walk. Inline: they are set per
 * output pixel inside the row loop.
 */
#ifndef MDLA_EMU_SIMD_DW4_ROWS_H
#define MDLA_EMU_SIMD_DW4_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simd.h"

/* k->off: each tap's bytes from its window's top-left pixel (an interior pixel's rows). */
static inline void emu_dw4_offsets(EmuDw4 *k, const EmuDwGeom *g) {
    for (int32_t i = 0; i < g->kh; i++)
        for (int32_t j = 0; j < g->kw; j++)
            k->off[i * g->kw + j] =
                ((ptrdiff_t)i * g->dil_h * g->w + (ptrdiff_t)j * g->dil_w) * g->c;
}

/* Pixel (oy, ox)'s input rows, one per tap of 4 * groups: its pixel inside the image, else (and
 * past the kh * kw taps) the row of zero points. `interior`: every tap of the window is inside
 * (emu_dw_columns' range on a row whose taps are all inside), so the offsets serve. */
static inline void emu_dw4_rows(const EmuDw4 *k, const EmuDwGeom *g, const int8_t *image,
                                int32_t oy, int32_t ox, bool interior, const int8_t **rows) {
    const int32_t taps = g->kh * g->kw;
    for (int32_t t = taps; t < 4 * k->groups; t++) rows[t] = k->zrow;
    if (interior) {
        const int32_t y0 = oy * g->stride_h - g->pad_top, x0 = ox * g->stride_w - g->pad_left;
        const int8_t *top = image + ((size_t)y0 * g->w + x0) * g->c;
        for (int32_t t = 0; t < taps; t++) rows[t] = top + k->off[t];
        return;
    }
    for (int32_t i = 0; i < g->kh; i++) {
        const int32_t iy = oy * g->stride_h + i * g->dil_h - g->pad_top;
        for (int32_t j = 0; j < g->kw; j++) {
            const int32_t ix = ox * g->stride_w + j * g->dil_w - g->pad_left;
            const bool in = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;
            rows[i * g->kw + j] = in ? image + ((size_t)iy * g->w + ix) * g->c : k->zrow;
        }
    }
}

#endif
