"""The op enum: members named as in the Neuron ABI where Neuron has the op (value = the Neuron
operation code). Ops that only exist before legalization (PyTorch-level constructs with no Neuron
operation, such as SILU or CONV_3D) use descriptive UPPER_CASE names and negative values.

Import it from `mdla_ir.ops` (or `mdla_ir`); it lives here so that `mdla_ir.schema` can describe
every kind and `mdla_ir.ops` derive the op groups from that schema.
"""

from __future__ import annotations

from enum import Enum


class OpKind(Enum):
    # Neuron / NNAPI operations (value = the Neuron operation code).
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    FULLY_CONNECTED = 9
    LOGISTIC = 14
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    SOFTMAX = 25
    TANH = 28
    DIV = 30
    MEAN = 31
    PAD = 32
    SUB = 36
    TRANSPOSE = 37
    CHANNEL_SHUFFLE = 46
    EXP = 49
    LOG = 60
    PRELU = 71
    QUANTIZE = 72
    RSQRT = 83
    SLICE = 86
    STRIDED_SLICE = 35
    SQRT = 88
    TRANSPOSE_CONV_2D = 91
    RESIZE_NEAREST_NEIGHBOR = 94
    HARD_SWISH = 99
    BATCH_MATMUL = 102

    # Pre-legalization constructs (no Neuron operation; negative values keep them apart).
    BATCH_NORM = -1
    SILU = -2
    HARD_SIGMOID = -3
    GELU = -4
    LAYER_NORM = -5
    CONV_3D = -6
    MAX_POOL_3D = -7
    ADAPTIVE_AVG_POOL_2D = -8
    FLATTEN = -9
    DROPOUT = -10
    IDENTITY = -11
    ARGMAX = -12  # host op only (int8 class index out): NNAPI's ARGMAX (39) outputs int32
    GRU = -13  # host op only, float32 in and out (torch.nn.GRU, one layer; mdla_quant gru.py)
    FULLY_CONNECTED_F32 = -14  # host op only: a FULLY_CONNECTED whose input is float32
    CONCATENATION_F32 = -45  # host op only: a float32 model output joining unlike ranges
    GROUP_NORM = -35  # host op only: GroupNorm / InstanceNorm, float32 between int8 in and out
    # Smooth unary functions the MDLA lacks (no EXP, silicon fact 2): imported as themselves so
    # that `check` names them; a CPU partition runs each as a 256-entry int8 table.
    ELU = -15
    MISH = -16
    SOFTPLUS = -17
    CELU = -18
    SELU = -19
    LOG_SIGMOID = -20
    TANHSHRINK = -21
    SOFTSIGN = -22
    # Elementwise functions of torch (trigonometry in a head's angle or a positional code), a
    # CPU partition's int8 tables as the ones above. (NNAPI's SIN, 85, is not in the adapter.)
    COS = -150
    SIN = -151
    TAN = -152
    ATAN = -153
    EXPM1 = -154
    LOG1P = -155
    ADAPTIVE_MAX_POOL_2D = -23  # to a size that does not divide: a CPU partition's
    REDUCE_SUM = -25  # sum over axes (MeanAttrs): legalized to MEAN times the count
    REDUCE_MAX = -26  # max over axes: legalized to MAX_POOL_2D windows over a reshaped view
    REDUCE_MIN = -27  # min over axes: -max(-x)
    CLAMP = -28  # clamp(x, lo, hi): RELU/RELU6/fused RELU1 compositions
    AVERAGE_POOL_3D = -85  # AvgPool3d: legalized to AVERAGE_POOL_2Ds over frames
    RECIPROCAL = -65  # 1 / x, a CPU table: legalize makes a DIV by an activation a MUL by it
    WHERE = -95  # where(x cmp t, a*x + b, c*x + d): torch.where/masked_fill on x, a CPU table
    SELECT = -100  # where(x cmp y, a, b) of four tensors: a CPU partition's (mdla_quant select)

    @property
    def is_neuron(self) -> bool:
        """True when the kind is a Neuron operation (its value is the Neuron operation code)."""
        return self.value >= 0
