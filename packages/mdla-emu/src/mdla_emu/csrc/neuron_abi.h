/*
 * neuron_abi.h: the whole MediaTek Neuron Adapter C ABI (all 85 functions of NeuronAdapter.h), written for this project from
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

/* 32 bytes on LP64: channelDim@0 scaleCount@4 scales@8 zeroPointCount@16 zeroPoints@24. */
typedef struct {
    uint32_t channelDim;
    uint32_t scaleCount;
    const float *scales;
    uint32_t zeroPointCount;
    const int32_t *zeroPoints;
} NeuronPerChannelQuantParams;

/* Android's hardware buffer: only ever passed by pointer (NeuronMemory_createFromAHardwareBuffer). */
typedef struct AHardwareBuffer AHardwareBuffer;

enum { NEURON_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128, NEURON_BYTE_SIZE_OF_CACHE_TOKEN = 32 };

/* NeuronCompilation_createV2's kind; restoreFromCompiledNetworkV2 takes it by C++ reference,
 * which is a pointer at the ABI level. */
typedef enum {
    COMPILATION_TYPE_NORMAL = 0,
    COMPILATION_TYPE_DEBUG_PLUS = 1,
    COMPILATION_TYPE_BATCHED = 2,
    COMPILATION_TYPE_MULTI_EXECUTIONS = 3,
    COMPILATION_TYPE_EXECUTION_CONTROLLER = 4,
} CompilationType;

typedef enum { NEURON_FEATURE_NONE = 0, NEURON_THROUGHPUT_MODE = 1 } NeuronFeatureType;

enum { /* setOptimizationHint: a bitmask */
    NEURON_OPTIMIZATION_NORMAL = 0,
    NEURON_OPTIMIZATION_LOW_LATENCY = 1 << 0,
    NEURON_OPTIMIZATION_DEEP_FUSION = 1 << 1,
    NEURON_OPTIMIZATION_BATCH_PROCESSING = 1 << 2,
    NEURON_OPTIMIZATION_DEFAULT = NEURON_OPTIMIZATION_NORMAL,
};

enum { /* setCacheFlushHint: a bitmask */
    NEURON_CACHE_FLUSH_ENABLE_ALL = 0,
    NEURON_CACHE_FLUSH_DISABLE_SYNC_INPUT = 1 << 0,
    NEURON_CACHE_FLUSH_DISABLE_INVALIDATE_OUTPUT = 1 << 1,
};

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
    /* Neuron-only extended types */
    NEURON_EXT_TENSOR_UINT32 = 9001,
    NEURON_EXT_TENSOR_QUANT8_ASYMM_PER_CHANNEL = 9002,
    NEURON_EXT_TENSOR_QUANT4_ASYMM = 9003,
    NEURON_EXT_TENSOR_QUANT4_ASYMM_SIGNED = 9004,
    NEURON_EXT_TENSOR_QUANT4_SYMM = 9005,
    NEURON_EXT_TENSOR_QUANT16_ASYMM_SIGNED = 9006,
    NEURON_EXT_TENSOR_RAW = 9007,
    NEURON_EXT_TENSOR_QUANT8_ASYMM_SIGNED_PER_CHANNEL = 9008,
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
    NEURON_OEM_OPERATION = 10000,
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


/* The rest of NeuronAdapter.h: 85 functions with the list above. The engine needs none of them;
 * the emulator defines every one (test_emu_abi.py checks `nm -D` against both lists). */
#define MDLA_NEURON_MORE_FUNCTIONS(X)                                                            \
    X(Neuron_getFeatureSupportedStatus, int, (NeuronFeatureType type, bool *supported))         \
    X(Neuron_getL1MemorySizeKb, int, (uint32_t * sizeKb))                                      \
    X(NeuronDevice_getDescription, int, (const NeuronDevice *device, const char **description)) \
    X(NeuronDevice_getExtensionSupport, int,                                                   \
      (const char *extensionName, bool *isExtensionSupported))                                 \
    X(Neuron_getDefaultLoopTimeout, uint64_t, (void))                                          \
    X(Neuron_getMaximumLoopTimeout, uint64_t, (void))                                          \
    X(NeuronModel_setOperandValueFromModel, int,                                               \
      (NeuronModel * model, int32_t index, const NeuronModel *value))                          \
    X(NeuronModel_setOperandPerChannelQuantParams, int,                                        \
      (NeuronModel * model, int32_t index, const NeuronPerChannelQuantParams *channelQuant))   \
    X(NeuronModel_addOperationExtension, int,                                                  \
      (NeuronModel * model, const char *name, const char *vendor, const NeuronDevice *device,  \
       uint32_t inputCount, const uint32_t *inputs, uint32_t outputCount,                      \
       const uint32_t *outputs))                                                               \
    X(NeuronModel_relaxComputationFloat32toFloat16, int, (NeuronModel * model, bool allow))    \
    X(NeuronModel_suppressInputConversion, int, (NeuronModel * model, bool suppress))          \
    X(NeuronModel_suppressOutputConversion, int, (NeuronModel * model, bool suppress))         \
    X(NeuronModel_getSupportedOperations, int,                                                 \
      (NeuronModel * model, bool *supported, uint32_t operationCount))                         \
    X(NeuronModel_setName, int, (NeuronModel * model, const char *name))                       \
    X(NeuronModel_getExtensionOperandType, int,                                                \
      (NeuronModel * model, const char *extensionName, uint16_t operandCodeWithinExtension,    \
       int32_t *type))                                                                         \
    X(NeuronModel_getExtensionOperationType, int,                                              \
      (NeuronModel * model, const char *extensionName, uint16_t operationCodeWithinExtension,  \
       int32_t *type))                                                                         \
    X(NeuronModel_setOperandExtensionData, int,                                                \
      (NeuronModel * model, int32_t index, const void *data, size_t length))                   \
    X(NeuronModel_restoreFromCompiledNetworkV2, int,                                           \
      (NeuronModel * *model, NeuronCompilation * *compilation, const void *buffer,             \
       const size_t size, const CompilationType *type))                                        \
    X(NeuronCompilation_create, int, (NeuronModel * model, NeuronCompilation * *compilation))  \
    X(NeuronCompilation_createWithOptions, int,                                                \
      (NeuronModel * model, NeuronCompilation * *compilation, const char *options))            \
    X(NeuronCompilation_createV2, int,                                                         \
      (NeuronModel * model, CompilationType type, const char *options,                         \
       NeuronCompilation **compilation))                                                       \
    X(NeuronCompilation_createForBatch, int,                                                   \
      (NeuronModel * model, NeuronCompilation * *compilation))                                 \
    X(NeuronCompilation_createForMultiExecutions, int,                                         \
      (NeuronModel * model, NeuronCompilation * *compilation))                                 \
    X(NeuronCompilation_createForDebug, int,                                                   \
      (NeuronModel * model, NeuronCompilation * *compilation))                                 \
    X(NeuronCompilation_setOptimizationHint, int,                                              \
      (NeuronCompilation * compilation, uint32_t optimizationCode))                            \
    X(NeuronCompilation_setOptimizationString, int,                                            \
      (NeuronCompilation * compilation, const char *optimizationString))                       \
    X(NeuronCompilation_setOnlyAllowOptimizationString, int,                                   \
      (NeuronCompilation * compilation, bool allow))                                           \
    X(NeuronCompilation_getOptimizationString, int,                                            \
      (NeuronCompilation * compilation, const char **optimizationString))                      \
    X(NeuronCompilation_setL1MemorySizeKb, int, (NeuronCompilation * compilation, uint32_t sizeKb)) \
    X(NeuronCompilation_setCaching, int,                                                       \
      (NeuronCompilation * compilation, const char *cacheDir, const uint8_t *token))           \
    X(NeuronCompilation_setTrimIOAlignment, int, (NeuronCompilation * compilation, bool enable)) \
    X(NeuronCompilation_setSWDilatedConv, int, (NeuronCompilation * compilation, bool enable)) \
    X(NeuronCompilation_getSupportedOperations, int,                                           \
      (NeuronCompilation * compilation, uint32_t operationCount, bool *supported))             \
    X(NeuronCompilation_getInputPaddedDimensions, int,                                         \
      (NeuronCompilation * compilation, int32_t index, uint32_t * dimensions))                 \
    X(NeuronCompilation_getOutputPaddedDimensions, int,                                        \
      (NeuronCompilation * compilation, int32_t index, uint32_t * dimensions))                 \
    X(NeuronCompilation_getInputPaddedSize, int,                                               \
      (NeuronCompilation * compilation, int32_t index, size_t * size))                         \
    X(NeuronCompilation_getOutputPaddedSize, int,                                              \
      (NeuronCompilation * compilation, int32_t index, size_t * size))                         \
    X(NeuronCompilation_getPreference, int, (NeuronCompilation * compilation, int *preference)) \
    X(NeuronCompilation_getPriority, int, (NeuronCompilation * compilation, int *priority))    \
    X(NeuronExecution_setInputFromMemory, int,                                                 \
      (NeuronExecution * execution, uint32_t index, const NeuronOperandType *type,             \
       const NeuronMemory *memory, size_t offset, size_t length))                              \
    X(NeuronExecution_setOutputFromMemory, int,                                                \
      (NeuronExecution * execution, uint32_t index, const NeuronOperandType *type,             \
       const NeuronMemory *memory, size_t offset, size_t length))                              \
    X(NeuronExecution_startComputeWithDependencies, int,                                       \
      (NeuronExecution * execution, const NeuronEvent *const *dependencies,                    \
       uint32_t num_dependencies, uint64_t duration, NeuronEvent **event))                     \
    X(NeuronExecution_setBoostHint, int, (NeuronExecution * execution, uint8_t boostValue))    \
    X(NeuronExecution_setCacheFlushHint, int, (NeuronExecution * execution, uint8_t flushHint)) \
    X(NeuronExecution_getOutputOperandRank, int,                                               \
      (NeuronExecution * execution, int32_t index, uint32_t * rank))                           \
    X(NeuronExecution_getOutputOperandDimensions, int,                                         \
      (NeuronExecution * execution, int32_t index, uint32_t * dimensions))                     \
    X(NeuronExecution_setLoopTimeout, int, (NeuronExecution * execution, uint64_t duration))   \
    X(NeuronExecution_setRunnerPoolSize, int, (NeuronExecution * execution, uint8_t numRunners)) \
    X(NeuronExecution_setBatchDone, int, (NeuronExecution * execution))                        \
    X(NeuronExecution_setIODone, int, (NeuronExecution * execution, int idx))                  \
    X(NeuronMemory_createFromFd, int,                                                          \
      (size_t size, int protect, int fd, size_t offset, NeuronMemory **memory))                \
    X(NeuronMemory_createFromAHardwareBuffer, int,                                             \
      (const AHardwareBuffer *ahwb, NeuronMemory **memory))                                    \
    X(NeuronMemory_free, void, (NeuronMemory * memory))                                        \
    X(NeuronEvent_wait, int, (NeuronEvent * event))                                            \
    X(NeuronEvent_free, void, (NeuronEvent * event))                                           \
    X(NeuronEvent_freeForce, void, (NeuronEvent * event))                                      \
    X(NeuronEvent_createFromSyncFenceFd, int, (int sync_fence_fd, NeuronEvent **event))        \
    X(NeuronEvent_getSyncFenceFd, int, (const NeuronEvent *event, int *sync_fence_fd))         \
    X(NeuronDebug_setReportPath, int, (NeuronModel * model, const char *path))

#define MDLA_NEURON_PROTOTYPE(name, ret, params) ret name params;
#define MDLA_NEURON_POINTER_TYPE(name, ret, params) typedef ret(*name##_fn) params;
MDLA_NEURON_FUNCTIONS(MDLA_NEURON_PROTOTYPE)
MDLA_NEURON_FUNCTIONS(MDLA_NEURON_POINTER_TYPE)
MDLA_NEURON_MORE_FUNCTIONS(MDLA_NEURON_PROTOTYPE)
MDLA_NEURON_MORE_FUNCTIONS(MDLA_NEURON_POINTER_TYPE)

/* Result code -> its name without the NEURON_ prefix ("UNMAPPABLE"), or "UNKNOWN". */
static inline const char *neuron_result_name(int code) {
    static const char *const names[] = {"NO_ERROR", "OUT_OF_MEMORY", "INCOMPLETE", "UNEXPECTED_NULL", "BAD_DATA", "OP_FAILED", "UNMAPPABLE", "BAD_STATE", "BAD_VERSION", "OUTPUT_INSUFFICIENT_SIZE", "UNAVAILABLE_DEVICE", "MISSED_DEADLINE_TRANSIENT", "MISSED_DEADLINE_PERSISTENT", "RESOURCE_EXHAUSTED_TRANSIENT", "RESOURCE_EXHAUSTED_PERSISTENT", "DEAD_OBJECT"};
    return (code >= 0 && code < (int)(sizeof names / sizeof names[0])) ? names[code] : "UNKNOWN";
}

#ifdef __cplusplus
}
#endif
#endif /* MDLA_NEURON_ABI_H */
