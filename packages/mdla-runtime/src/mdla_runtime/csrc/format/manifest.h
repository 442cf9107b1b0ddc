/*
 * manifest.h: reading a .mdla file in C (layout in mdla_runtime/container.py).
 *
 * mdla_manifest_parse validates everything the Python reader validates, check by check in the
 * same order, and fills plain structs that point into the caller's buffer (constant data and
 * names are not copied). On failure it fills an mdla_error whose kind is the Python class name
 * (BadMagic, TruncatedData, ...), with the field path and the byte offset.
 */
#ifndef MDLA_MANIFEST_H
#define MDLA_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mdla_msgpack.h"

#define MDLA_MAGIC "\x89MDLA\r\n\x1a"
#define MDLA_FORMAT_VERSION 3u /* 3: partitions (issue 17); 2: the model section's key list */
#define MDLA_FORMAT_OLDEST 2u  /* a format-2 file reads as one partition of every operation */
#define MDLA_CPU_DEVICE "cpu"  /* the partition device the engine runs with its own kernels */
#define MDLA_PREAMBLE 20u
#define MDLA_ALIGN 64u
#define MDLA_MAX_HEADER (64ull << 20)
#define MDLA_MAX_RANK 8u
#define MDLA_MAX_ELEMENTS 2147483647ull

/* The resource budget (mdla_runtime/format/budget.py, the same defaults); the engine's
 * --max-tensor-mb, --max-total-mb, --max-header-values, --max-op-gops and --max-total-gops
 * raise it. The work limits count multiply-adds or compares (manifest_compute.c). */
#define MDLA_DEFAULT_MAX_TENSOR_BYTES (256ull << 20)
#define MDLA_DEFAULT_MAX_TOTAL_BYTES (1024ull << 20)
#define MDLA_DEFAULT_MAX_OP_OPS (16ull * 1000000000ull)
#define MDLA_DEFAULT_MAX_TOTAL_OPS (256ull * 1000000000ull)
typedef struct {
    uint64_t max_tensor_bytes, max_total_bytes;
    uint32_t max_header_values;
    uint64_t max_op_ops, max_total_ops;
} mdla_budget;
extern const mdla_budget MDLA_DEFAULT_BUDGET;

typedef struct {
    const char *s; /* not NUL-terminated; print with %.*s */
    uint32_t n;
} mdla_str;

typedef struct {
    int32_t type;
    uint32_t rank;
    uint32_t dims[MDLA_MAX_RANK];
    uint64_t elements;
    mdla_str name;
    float scale;
    int32_t zero_point;
    bool per_channel;
    uint32_t channel_dim;
    uint32_t n_scales;
    float *scales; /* owned */
    bool has_data;
    const uint8_t *data;
    uint64_t data_offset, data_len;
    bool has_value;
    int32_t i32;
    float f32;
    bool b8;
} mdla_operand;

typedef struct {
    int32_t code;
    uint32_t n_inputs, n_outputs;
    uint32_t *inputs, *outputs; /* owned */
    mdla_str name;
} mdla_operation;

typedef struct {
    uint32_t operand;
    mdla_str name;
    float scale;
    int32_t zero_point;
} mdla_io;

/* Operations (ascending indices) on one device, and the operands crossing into and out of it;
 * partitions run in list order (format 3; manifest_check.c:sem_partitions). */
typedef struct {
    mdla_str device;
    uint32_t n_operations, n_inputs, n_outputs;
    uint32_t *operations, *inputs, *outputs; /* owned */
} mdla_partition;

typedef struct {
    mdla_str model_name;
    mdla_str rounding; /* model.rounding: "double" or "single" (the engine runs with it) */
    uint32_t n_operands, n_operations, n_inputs, n_outputs;
    mdla_operand *operands;
    mdla_operation *operations;
    mdla_io *inputs, *outputs;
    uint64_t header_length, data_start, data_size;
    uint32_t version;      /* the file's format (2 or 3) */
    uint32_t n_partitions; /* at least 1 once parsed; a format-2 file's one is synthesized */
    mdla_partition *partitions;
} mdla_manifest;

/* Structure, then semantics (cross references, shapes, quantization, the budget): see
 * manifest_check.c:chk_semantics and mdla_runtime/format/semantic.py. */
bool mdla_manifest_parse(const uint8_t *buf, size_t size, mdla_manifest *m, mdla_error *err);
bool mdla_manifest_parse_budget(const uint8_t *buf, size_t size, const mdla_budget *budget,
                                mdla_manifest *m, mdla_error *err);
void mdla_manifest_free(mdla_manifest *m);
const char *mdla_type_name(int32_t type);
size_t mdla_element_size(int32_t type); /* 0 for scalars and unknown codes */
bool mdla_arity_ok(int32_t code, uint32_t n_inputs, uint32_t n_outputs);

#endif /* MDLA_MANIFEST_H */
