/* The calibration moments' per-channel sums (mdla_quant.observers.ChannelMoments without its
   map): rows x c float32 values (NHWC positions by channels), each widened to float64 and
   added to its channel's float64 sum, the rows in order. One read of the tensor, where the
   map's running sum read and wrote 8 bytes of float64 per value. */

#include <stddef.h>

void mdla_channel_sums_f32(const float *x, size_t rows, size_t c, double *sums) {
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * c;
        for (size_t j = 0; j < c; j++) sums[j] += (double)row[j];
    }
}
