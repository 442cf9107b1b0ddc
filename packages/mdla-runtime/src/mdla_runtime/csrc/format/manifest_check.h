/*
 * manifest_check.h: the schema-checking helpers manifest.c uses (private to the C reader).
 * Each helper mirrors one of mdla_runtime/validate.py's, with the same messages and offsets.
 */
#ifndef MDLA_MANIFEST_CHECK_H
#define MDLA_MANIFEST_CHECK_H

#include "manifest.h"

typedef struct {
    const mp_doc *doc;
    mdla_error *err;
    char field[MDLA_FIELD_MAX];
} checker;

const mp_node *chk_node(const checker *c, uint32_t i);
bool chk_fail(checker *c, const char *kind, const char *field, uint64_t off, const char *why);
void chk_sub(char *out, const char *field, const char *key);
bool chk_in_list(const mp_node *key, const char *const *names);
bool chk_keys(checker *c, uint32_t map, const char *field, const char *const *allowed,
              const char *const *required);
bool chk_is_uint(const mp_node *n, uint64_t limit);
bool chk_is_i32(const mp_node *n);
bool chk_typed(checker *c, uint32_t map, const char *key, const char *field, const char *kind);
bool chk_uint_list(checker *c, uint32_t arr, const char *field, uint64_t limit);
uint64_t chk_list_at(const checker *c, uint32_t arr, uint32_t k);
mdla_str chk_str_of(const checker *c, uint32_t map, const char *key);
bool chk_model(checker *c, uint32_t model, mdla_str *rounding);
bool chk_semantics(checker *c, const mdla_manifest *m, const mdla_budget *b);
bool chk_compute(checker *c, const mdla_manifest *m, const mdla_budget *b); /* manifest_compute.c */
bool chk_finite(checker *c, const mdla_manifest *m);                        /* manifest_compute.c */

#endif /* MDLA_MANIFEST_CHECK_H */
