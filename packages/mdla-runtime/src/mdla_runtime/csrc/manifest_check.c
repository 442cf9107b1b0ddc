/* manifest_check.c: the schema-checking helpers of the C reader (see manifest_check.h). */
#include "manifest_check.h"

#include <stdio.h>
#include <string.h>


const mp_node *chk_node(const checker *c, uint32_t i) { return &c->doc->nodes[i]; }

bool chk_fail(checker *c, const char *kind, const char *field, uint64_t off, const char *why) {
    mdla_fail(c->err, kind, field, off, "%s", why);
    return false;
}

/* field + "." + key (or key alone under the root, as the Python reader names them) */
void chk_sub(char *out, const char *field, const char *key) {
    if (strcmp(field, "header") == 0) mdla_fmt(out, MDLA_FIELD_MAX, "%s", key);
    else mdla_fmt(out, MDLA_FIELD_MAX, "%s.%s", field, key);
}

bool chk_in_list(const mp_node *key, const char *const *names) {
    for (; *names; names++)
        if (mp_key_is(key, *names)) return true;
    return false;
}

bool chk_keys(checker *c, uint32_t map, const char *field, const char *const *allowed,
                 const char *const *required) {
    char f[MDLA_FIELD_MAX];
    const mp_node *m = chk_node(c, map);
    if (m->kind != MP_MAP) return chk_fail(c, "BadHeader", field, m->offset, "expected a map");
    uint32_t k = map + 1;
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t v = chk_node(c, k)->next;
        if (!chk_in_list(chk_node(c, k), allowed)) {
            char key[MDLA_FIELD_MAX];
            mdla_fmt(key, sizeof key, "%.*s", (int)(chk_node(c, k)->count > 200 ? 200 : chk_node(c, k)->count),
                     chk_node(c, k)->v.s);
            chk_sub(f, field, key);
            return chk_fail(c, "BadHeader", f, chk_node(c, v)->offset, "unknown key");
        }
        k = chk_node(c, v)->next;
    }
    for (; *required; required++) {
        if (!mp_get(c->doc, map, *required)) {
            chk_sub(f, field, *required);
            return chk_fail(c, "BadHeader", f, m->offset, "required key is missing");
        }
    }
    return true;
}

bool chk_is_uint(const mp_node *n, uint64_t limit) { return n->kind == MP_UINT && n->v.u <= limit; }
bool chk_is_i32(const mp_node *n) {
    return (n->kind == MP_UINT && n->v.u <= INT32_MAX) || (n->kind == MP_NINT && n->v.i >= INT32_MIN);
}

/* chk_typed(): the value of `key` in `map`, if present, has the kind named. */
bool chk_typed(checker *c, uint32_t map, const char *key, const char *field, const char *kind) {
    uint32_t v = mp_get(c->doc, map, key);
    if (!v) return true;
    const mp_node *n = chk_node(c, v);
    bool ok;
    if (strcmp(kind, "int") == 0) ok = chk_is_i32(n);
    else if (strcmp(kind, "uint") == 0) ok = chk_is_uint(n, UINT32_MAX);
    else if (strcmp(kind, "float") == 0) ok = n->kind == MP_FLOAT;
    else if (strcmp(kind, "str") == 0) ok = n->kind == MP_STR;
    else if (strcmp(kind, "bool") == 0) ok = n->kind == MP_BOOL;
    else { /* floats */
        ok = n->kind == MP_ARRAY;
        for (uint32_t i = 0, e = v + 1; ok && i < n->count; i++, e = chk_node(c, e)->next)
            ok = chk_node(c, e)->kind == MP_FLOAT;
    }
    if (ok) return true;
    char f[MDLA_FIELD_MAX];
    mdla_fmt(f, sizeof f, "%s.%s", field, key);
    mdla_fail(c->err, "BadHeader", f, n->offset, "expected %s", kind);
    return false;
}

/* chk_uint_list(): an array of unsigned ints, each <= limit (else DimsOverflow). */
bool chk_uint_list(checker *c, uint32_t arr, const char *field, uint64_t limit) {
    const mp_node *a = chk_node(c, arr);
    if (a->kind != MP_ARRAY) return chk_fail(c, "BadHeader", field, a->offset, "expected an array");
    char f[MDLA_FIELD_MAX];
    uint32_t e = arr + 1;
    for (uint32_t k = 0; k < a->count; k++, e = chk_node(c, e)->next) {
        mdla_fmt(f, sizeof f, "%s[%u]", field, k);
        if (chk_node(c, e)->kind != MP_UINT) return chk_fail(c, "BadHeader", f, chk_node(c, e)->offset, "not an unsigned int");
        if (chk_node(c, e)->v.u > limit) return chk_fail(c, "DimsOverflow", f, chk_node(c, e)->offset, "value too large");
    }
    return true;
}

uint64_t chk_list_at(const checker *c, uint32_t arr, uint32_t k) {
    uint32_t e = arr + 1;
    while (k--) e = chk_node(c, e)->next;
    return chk_node(c, e)->v.u;
}

mdla_str chk_str_of(const checker *c, uint32_t map, const char *key) {
    uint32_t v = mp_get(c->doc, map, key);
    mdla_str s = {"", 0};
    if (v && chk_node(c, v)->kind == MP_STR) { s.s = chk_node(c, v)->v.s; s.n = chk_node(c, v)->count; }
    return s;
}

