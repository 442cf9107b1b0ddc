/* A test driver for builds Python cannot load (aarch64 under qemu): prints the emulator's
 * emu_isa() (kernels/simd.h: 0 portable, 1 AVX2, 2 AVX-512, 3 NEON) as read from this
 * process's environment, then whether the sdot depthwise (simd_neon.h emu_dw4_neon_ready) would
 * run for 16 channels and for 15, as 0 or 1, then whether CONV_2D takes the rows GEMM
 * (gemm_rows.h emu_gemm_rows_ready) and FULLY_CONNECTED the 8-bit GEMM (gemm.h
 * emu_gemm_u8_ready); linked against libneuron_emu.so. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

int emu_isa(void);
bool emu_dw4_neon_ready(int32_t c);
bool emu_gemm_rows_ready(void);
bool emu_gemm_u8_ready(void);

int main(void) {
    printf("%d %d %d %d %d\n", emu_isa(), emu_dw4_neon_ready(16), emu_dw4_neon_ready(15),
           emu_gemm_rows_ready(), emu_gemm_u8_ready());
    return 0;
}
