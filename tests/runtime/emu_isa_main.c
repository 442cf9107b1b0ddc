/* A test driver for builds Python cannot load (aarch64 under qemu): prints the emulator's
 * emu_isa() (kernels/simd.h: 0 portable, 1 AVX2, 2 AVX-512, 3 NEON) as read from this
 * process's environment, linked against libneuron_emu.so. */
#include <stdio.h>

int emu_isa(void);

int main(void) {
    printf("%d\n", emu_isa());
    return 0;
}
