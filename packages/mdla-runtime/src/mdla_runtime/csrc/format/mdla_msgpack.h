/*
 * mdla_msgpack.h: a small, strict msgpack reader for .mdla headers (written for this project).
 *
 * The header is decoded into a flat array of nodes in pre-order. A container node knows how many
 * children it has and where its subtree ends, so walking a map is a loop over `next`. Only nil,
 * bool, ints, float32/64, str (valid UTF-8), array and map (string keys, no duplicates) are
 * accepted; nesting is bounded; lengths are checked against the bytes left before anything is
 * allocated. Errors name the field path and the file offset exactly as the Python reader does
 * (mdla_runtime/msgpack_reader.py).
 */
#ifndef MDLA_MSGPACK_H
#define MDLA_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MDLA_FIELD_MAX 256
#define MDLA_WHY_MAX 256

typedef struct {
    const char *kind; /* "BadMagic", "BadHeader", ... (the Python class names) */
    char field[MDLA_FIELD_MAX];
    uint64_t offset;
    char why[MDLA_WHY_MAX];
} mdla_error;

void mdla_fail(mdla_error *err, const char *kind, const char *field, uint64_t offset,
               const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* snprintf that may truncate on purpose (field paths are bounded; truncation is harmless). */
void mdla_fmt(char *out, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

enum { MP_NIL, MP_BOOL, MP_UINT, MP_NINT, MP_FLOAT, MP_STR, MP_ARRAY, MP_MAP };

typedef struct {
    uint8_t kind;
    uint32_t count;  /* str: bytes; array: elements; map: entries */
    uint32_t next;   /* index of the first node after this subtree */
    uint64_t offset; /* file offset of the value's first byte */
    union {
        bool b;
        uint64_t u;
        int64_t i;
        double f;
        const char *s; /* into the file buffer, not NUL-terminated */
    } v;
} mp_node;

typedef struct {
    mp_node *nodes;
    uint32_t count;
    uint32_t cap;
} mp_doc;

#define MP_DEFAULT_MAX_NODES (1u << 20) /* format/budget.py: max_header_values */

/* Decode buf[start, end) (file offsets) into doc; false and *err on any malformation, or
 * OverBudget before the (max_nodes + 1)-th value (map keys count) is read. */
bool mp_decode(const uint8_t *buf, uint64_t start, uint64_t end, mp_doc *doc, mdla_error *err);
bool mp_decode_limited(const uint8_t *buf, uint64_t start, uint64_t end, uint32_t max_nodes,
                       mp_doc *doc, mdla_error *err);

/* A map key as it appears in a field path (msgpack_reader.py: escape_key): `\ . [ ] <`
 * backslashed, \n \t \r, other control bytes as \xHH; out is NUL-terminated, truncated. */
void mdla_escape_key(char *out, size_t size, const char *s, uint32_t n);
void mp_free(mp_doc *doc);

/* The value of `key` in the map at node `map`, or 0 (node 0 is the root, never a value). */
uint32_t mp_get(const mp_doc *doc, uint32_t map, const char *key);
bool mp_key_is(const mp_node *key, const char *s);

#endif /* MDLA_MSGPACK_H */
