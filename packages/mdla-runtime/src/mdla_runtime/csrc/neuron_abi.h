/*
 * neuron_abi.h: the MediaTek Neuron Adapter C ABI as mdla uses it, written for this project from
 * the facts in shared/docs/reference/neuron-adapter-abi.md (function signatures, struct layouts
 * and enum values). Both sides include it: mdla-engine calls these functions through dlsym, and
 * libneuron_emu.so implements them, so the engine runs unchanged on a phone or on the emulator.
 *
 * Result codes are Neuron's, which differ from NNAPI's from 6 upward (UNMAPPABLE = 6).
 */
#ifndef MDLA_NEURON_ABI_H
#define MDLA_NEURON_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct NeuronModel NeuronModel;
typedef struct NeuronCompilation NeuronCompilation;
typedef struct NeuronExecution NeuronExecution;
typedef struct NeuronDevice NeuronDevice;
typedef struct NeuronMemory NeuronMemory;
typedef struct NeuronEvent NeuronEvent;

/* 24 bytes on LP64: type@0 dimensionCount@4 dimensions@8 scale@16 zeroPoint@20. */
typedef struct {
    int32_t type;
    uint32_t dimensionCount;
    const uint32_t *dimensions;
    float scale;
    int32_t zeroPoint;
} NeuronOperandType;

/* 16 bytes on LP64: channelDim@0 scaleCount@4 scales@8. */
typedef struct {
    uint32_t channelDim;
    uint32_t scaleCount;
    const float *scales;
} NeuronSymmPerChannelQuantParams;

typedef struct {
    uint8_t major;
    uint8_t minor;
    uint8_t patch;
} NeuronRuntimeVersion;

enum {
    NEURON_NO_ERROR = 0,
    NEURON_OUT_OF_MEMORY = 1,
    NEURON_INCOMPLETE = 2,
    NEURON_UNEXPECTED_NULL = 3,
    NEURON_BAD_DATA = 4,
    NEURON_OP_FAILED = 5,
    NEURON_UNMAPPABLE = 6,
    NEURON_BAD_STATE = 7,
    NEURON_BAD_VERSION = 8,
    NEURON_OUTPUT_INSUFFICIENT_SIZE = 9,
    NEURON_UNAVAILABLE_DEVICE = 10,
    NEURON_MISSED_DEADLINE_TRANSIENT = 11,
    NEURON_MISSED_DEADLINE_PERSISTENT = 12,
    NEURON_RESOURCE_EXHAUSTED_TRANSIENT = 13,
    NEURON_RESOURCE_EXHAUSTED_PERSISTENT = 14,
    NEURON_DEAD_OBJECT = 15,
};

enum {
    NEURON_FLOAT32 = 0,
    NEURON_INT32 = 1,
    NEURON_UINT32 = 2,
    NEURON_TENSOR_FLOAT32 = 3,
    NEURON_TENSOR_INT32 = 4,
    NEURON_TENSOR_QUANT8_ASYMM = 5,
    NEURON_BOOL = 6,
    NEURON_TENSOR_QUANT16_SYMM = 7,
    NEURON_TENSOR_FLOAT16 = 8,
    NEURON_TENSOR_BOOL8 = 9,
    NEURON_FLOAT16 = 10,
    NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL = 11,
    NEURON_TENSOR_QUANT16_ASYMM = 12,
    NEURON_TENSOR_QUANT8_SYMM = 13,
    NEURON_TENSOR_QUANT8_ASYMM_SIGNED = 14,
    NEURON_MODEL = 15,
};

typedef int32_t NeuronOperationType;
enum {
    NEURON_ADD = 0,
    NEURON_AVERAGE_POOL_2D = 1,
    NEURON_CONCATENATION = 2,
    NEURON_CONV_2D = 3,
    NEURON_DEPTHWISE_CONV_2D = 4,
    NEURON_DEPTH_TO_SPACE = 5,
    NEURON_DEQUANTIZE = 6,
    NEURON_EMBEDDING_LOOKUP = 7,
    NEURON_FLOOR = 8,
    NEURON_FULLY_CONNECTED = 9,
    NEURON_HASHTABLE_LOOKUP = 10,
    NEURON_L2_NORMALIZATION = 11,
    NEURON_L2_POOL_2D = 12,
    NEURON_LOCAL_RESPONSE_NORM = 13,
    NEURON_LOGISTIC = 14,
    NEURON_LSH_PROJECTION = 15,
    NEURON_LSTM = 16,
    NEURON_MAX_POOL_2D = 17,
    NEURON_MUL = 18,
    NEURON_RELU = 19,
    NEURON_RELU1 = 20,
    NEURON_RELU6 = 21,
    NEURON_RESHAPE = 22,
    NEURON_RESIZE_BILINEAR = 23,
    NEURON_RNN = 24,
    NEURON_SOFTMAX = 25,
    NEURON_SPACE_TO_DEPTH = 26,
    NEURON_SVDF = 27,
    NEURON_TANH = 28,
    NEURON_BATCH_TO_SPACE_ND = 29,
    NEURON_DIV = 30,
    NEURON_MEAN = 31,
    NEURON_PAD = 32,
    NEURON_SPACE_TO_BATCH_ND = 33,
    NEURON_SQUEEZE = 34,
    NEURON_STRIDED_SLICE = 35,
    NEURON_SUB = 36,
    NEURON_TRANSPOSE = 37,
    NEURON_ABS = 38,
    NEURON_ARGMAX = 39,
    NEURON_ARGMIN = 40,
    NEURON_AXIS_ALIGNED_BBOX_TRANSFORM = 41,
    NEURON_BIDIRECTIONAL_SEQUENCE_LSTM = 42,
    NEURON_BIDIRECTIONAL_SEQUENCE_RNN = 43,
    NEURON_BOX_WITH_NMS_LIMIT = 44,
    NEURON_CAST = 45,
    NEURON_CHANNEL_SHUFFLE = 46,
    NEURON_DETECTION_POSTPROCESSING = 47,
    NEURON_EQUAL = 48,
    NEURON_EXP = 49,
    NEURON_EXPAND_DIMS = 50,
    NEURON_GATHER = 51,
    NEURON_GENERATE_PROPOSALS = 52,
    NEURON_GREATER = 53,
    NEURON_GREATER_EQUAL = 54,
    NEURON_GROUPED_CONV_2D = 55,
    NEURON_HEATMAP_MAX_KEYPOINT = 56,
    NEURON_INSTANCE_NORMALIZATION = 57,
    NEURON_LESS = 58,
    NEURON_LESS_EQUAL = 59,
    NEURON_LOG = 60,
    NEURON_LOGICAL_AND = 61,
    NEURON_LOGICAL_NOT = 62,
    NEURON_LOGICAL_OR = 63,
    NEURON_LOG_SOFTMAX = 64,
    NEURON_MAXIMUM = 65,
    NEURON_MINIMUM = 66,
    NEURON_NEG = 67,
    NEURON_NOT_EQUAL = 68,
    NEURON_PAD_V2 = 69,
    NEURON_POW = 70,
    NEURON_PRELU = 71,
    NEURON_QUANTIZE = 72,
    NEURON_QUANTIZED_16BIT_LSTM = 73,
    NEURON_RANDOM_MULTINOMIAL = 74,
    NEURON_REDUCE_ALL = 75,
    NEURON_REDUCE_ANY = 76,
    NEURON_REDUCE_MAX = 77,
    NEURON_REDUCE_MIN = 78,
    NEURON_REDUCE_PROD = 79,
    NEURON_REDUCE_SUM = 80,
    NEURON_ROI_ALIGN = 81,
    NEURON_ROI_POOLING = 82,
    NEURON_RSQRT = 83,
    NEURON_SELECT = 84,
    NEURON_SIN = 85,
    NEURON_SLICE = 86,
    NEURON_SPLIT = 87,
    NEURON_SQRT = 88,
    NEURON_TILE = 89,
    NEURON_TOPK_V2 = 90,
    NEURON_TRANSPOSE_CONV_2D = 91,
    NEURON_UNIDIRECTIONAL_SEQUENCE_LSTM = 92,
    NEURON_UNIDIRECTIONAL_SEQUENCE_RNN = 93,
    NEURON_RESIZE_NEAREST_NEIGHBOR = 94,
    NEURON_QUANTIZED_LSTM = 95,
    NEURON_IF = 96,
    NEURON_WHILE = 97,
    NEURON_ELU = 98,
    NEURON_HARD_SWISH = 99,
    NEURON_FILL = 100,
    NEURON_RANK = 101,
    NEURON_BATCH_MATMUL = 102,
    NEURON_PACK = 103,
    NEURON_MIRROR_PAD = 104,
    NEURON_MIRROR_REVERSE = 105,
    NEURON_HYFBCTOYUV420 = 106,
    NEURON_YUV420TOAFBC = 107,
};

enum { NEURON_FUSED_NONE = 0, NEURON_FUSED_RELU = 1, NEURON_FUSED_RELU1 = 2, NEURON_FUSED_RELU6 = 3 };
enum { NEURON_PADDING_SAME = 1, NEURON_PADDING_VALID = 2 };
enum {
    NEURON_PREFER_LOW_POWER = 0,
    NEURON_PREFER_FAST_SINGLE_ANSWER = 1,
    NEURON_PREFER_SUSTAINED_SPEED = 2,
    NEURON_PREFER_TURBO_BOOST = 3
};
enum { NEURON_PRIORITY_LOW = 90, NEURON_PRIORITY_MEDIUM = 100, NEURON_PRIORITY_HIGH = 110 };

/* The functions, as prototypes (the emulator defines them) and as pointer types (the engine
 * resolves them with dlsym). X(name, return, params) keeps the two lists in one place. */
#define MDLA_NEURON_FUNCTIONS(X)                                                                 \
    X(Neuron_getVersion, int, (NeuronRuntimeVersion * version))                                \
    X(Neuron_getDeviceCount, int, (uint32_t * numDevices))                                     \
    X(Neuron_getDevice, int, (uint32_t devIndex, NeuronDevice * *device))                      \
    X(NeuronDevice_getName, int, (const NeuronDevice *device, const char **name))             \
    X(NeuronModel_create, int, (NeuronModel * *model))                                         \
    X(NeuronModel_free, void, (NeuronModel * model))                                           \
    X(NeuronModel_addOperand, int, (NeuronModel * model, const NeuronOperandType *type))       \
    X(NeuronModel_setOperandValue, int,                                                        \
      (NeuronModel * model, int32_t index, const void *buffer, size_t length))                 \
    X(NeuronModel_setOperandSymmPerChannelQuantParams, int,                                    \
      (NeuronModel * model, int32_t index, const NeuronSymmPerChannelQuantParams *channelQuant)) \
    X(NeuronModel_addOperation, int,                                                           \
      (NeuronModel * model, NeuronOperationType type, uint32_t inputCount,                     \
       const uint32_t *inputs, uint32_t outputCount, const uint32_t *outputs))                 \
    X(NeuronModel_identifyInputsAndOutputs, int,                                               \
      (NeuronModel * model, uint32_t inputCount, const uint32_t *inputs, uint32_t outputCount, \
       const uint32_t *outputs))                                                               \
    X(NeuronModel_finish, int, (NeuronModel * model))                                          \
    X(NeuronModel_getSupportedOperationsForDevices, int,                                       \
      (const NeuronModel *model, const NeuronDevice *const *devices, uint32_t numDevices,      \
       bool *supportedOps))                                                                    \
    X(NeuronModel_restoreFromCompiledNetwork, int,                                             \
      (NeuronModel * *model, NeuronCompilation * *compilation, const void *buffer,             \
       const size_t size))                                                                     \
    X(NeuronCompilation_createForDevices, int,                                                 \
      (NeuronModel * model, const NeuronDevice *const *devices, uint32_t numDevices,           \
       NeuronCompilation **compilation))                                                       \
    X(NeuronCompilation_setPreference, int, (NeuronCompilation * compilation, int32_t preference)) \
    X(NeuronCompilation_setPriority, int, (NeuronCompilation * compilation, int priority))     \
    X(NeuronCompilation_finish, int, (NeuronCompilation * compilation))                        \
    X(NeuronCompilation_free, void, (NeuronCompilation * compilation))                         \
    X(NeuronCompilation_getCompiledNetworkSize, int,                                           \
      (NeuronCompilation * compilation, size_t * size))                                        \
    X(NeuronCompilation_storeCompiledNetwork, int,                                             \
      (NeuronCompilation * compilation, void *buffer, const size_t size))                      \
    X(NeuronExecution_create, int, (NeuronCompilation * compilation, NeuronExecution * *execution)) \
    X(NeuronExecution_free, void, (NeuronExecution * execution))                               \
    X(NeuronExecution_setInput, int,                                                           \
      (NeuronExecution * execution, int32_t index, const NeuronOperandType *type,              \
       const void *buffer, size_t length))                                                     \
    X(NeuronExecution_setOutput, int,                                                          \
      (NeuronExecution * execution, int32_t index, const NeuronOperandType *type, void *buffer, \
       size_t length))                                                                         \
    X(NeuronExecution_compute, int, (NeuronExecution * execution))

#define MDLA_NEURON_PROTOTYPE(name, ret, params) ret name params;
#define MDLA_NEURON_POINTER_TYPE(name, ret, params) typedef ret(*name##_fn) params;
MDLA_NEURON_FUNCTIONS(MDLA_NEURON_PROTOTYPE)
MDLA_NEURON_FUNCTIONS(MDLA_NEURON_POINTER_TYPE)

/* Result code -> its name without the NEURON_ prefix ("UNMAPPABLE"), or "UNKNOWN". */
static inline const char *neuron_result_name(int code) {
    static const char *const names[] = {"NO_ERROR", "OUT_OF_MEMORY", "INCOMPLETE", "UNEXPECTED_NULL", "BAD_DATA", "OP_FAILED", "UNMAPPABLE", "BAD_STATE", "BAD_VERSION", "OUTPUT_INSUFFICIENT_SIZE", "UNAVAILABLE_DEVICE", "MISSED_DEADLINE_TRANSIENT", "MISSED_DEADLINE_PERSISTENT", "RESOURCE_EXHAUSTED_TRANSIENT", "RESOURCE_EXHAUSTED_PERSISTENT", "DEAD_OBJECT"};
    return (code >= 0 && code < (int)(sizeof names / sizeof names[0])) ? names[code] : "UNKNOWN";
}

#ifdef __cplusplus
}
#endif
#endif /* MDLA_NEURON_ABI_H */
