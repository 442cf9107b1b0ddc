/* manifest_check.c: the schema-checking helpers of the C reader (see manifest_check.h). */
#include "manifest_check.h"
#include "mdla_model_keys.h"

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


/* ---- the model section (mirrors mdla_runtime/format/model.py:check_model; its key lists
 * come from there too, generated into mdla_model_keys.h) ---- */

static bool same_str(const mp_node *a, const mp_node *b) {
    return a->kind == MP_STR && b->kind == MP_STR && a->count == b->count &&
           memcmp(a->v.s, b->v.s, a->count) == 0;
}

/* chk_model(): the model section has exactly MODEL_KEYS, each of its type; *rounding is set
 * to model.rounding ("double" or "single"). */
bool chk_model(checker *c, uint32_t model, mdla_str *rounding) {
    char f[MDLA_FIELD_MAX + 32];
    if (!chk_keys(c, model, "model", MODEL_KEYS, MODEL_REQ)) return false;
    static const char *const strs[] = {"name", "content_hash", "source_hash", "rounding",
                                       "spec", "module", "target", "device"};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if (!chk_typed(c, model, strs[k], "model", "str")) return false;
    if (!chk_typed(c, model, "calibration_samples", "model", "uint") ||
        !chk_typed(c, model, "probe_patched", "model", "bool"))
        return false;
    const mp_node *r = chk_node(c, mp_get(c->doc, model, "rounding"));
    if (!mp_key_is(r, "double") && !mp_key_is(r, "single"))
        return chk_fail(c, "BadHeader", "model.rounding", r->offset, "expected `double` or `single`");
    rounding->s = r->v.s;
    rounding->n = r->count;
    uint32_t rules = mp_get(c->doc, model, "rules");
    const mp_node *rm = chk_node(c, rules);
    if (rm->kind != MP_MAP) return chk_fail(c, "BadHeader", "model.rules", rm->offset, "expected a map");
    for (uint32_t i = 0, k = rules + 1; i < rm->count; i++) {
        const mp_node *key = chk_node(c, k), *v = chk_node(c, key->next);
        if (!chk_is_uint(v, UINT32_MAX)) {
            mdla_fmt(f, sizeof f, "model.rules.%.*s", (int)(key->count > 200 ? 200 : key->count), key->v.s);
            return chk_fail(c, "BadHeader", f, v->offset, "expected uint");
        }
        k = v->next;
    }
    uint32_t labels = mp_get(c->doc, model, "labels");
    const mp_node *lm = chk_node(c, labels);
    if (lm->kind != MP_ARRAY) return chk_fail(c, "BadHeader", "model.labels", lm->offset, "expected an array");
    for (uint32_t i = 0, e = labels + 1; i < lm->count; i++, e = chk_node(c, e)->next) {
        if (chk_node(c, e)->kind != MP_STR) {
            mdla_fmt(f, sizeof f, "model.labels[%u]", i);
            return chk_fail(c, "BadHeader", f, chk_node(c, e)->offset, "expected str");
        }
    }
    uint32_t quant = mp_get(c->doc, model, "quant");
    if (quant) {
        if (!chk_keys(c, quant, "model.quant", QUANT_KEYS, QUANT_KEYS)) return false;
        for (size_t k = 0; QUANT_KEYS[k]; k++)
            if (!chk_typed(c, quant, QUANT_KEYS[k], "model.quant", QUANT_TYPES[k])) return false;
        const mp_node *qr = chk_node(c, mp_get(c->doc, quant, "rounding"));
        if (!same_str(qr, r))
            return chk_fail(c, "BadHeader", "model.quant.rounding", qr->offset, "disagrees with model.rounding");
    }
    uint32_t pre = mp_get(c->doc, model, "preprocess");
    if (pre) {
        if (!chk_keys(c, pre, "model.preprocess", PREPROCESS_KEYS, PREPROCESS_KEYS) ||
            !chk_typed(c, pre, "mode", "model.preprocess", "str") ||
            !chk_uint_list(c, mp_get(c->doc, pre, "size"), "model.preprocess.size", UINT32_MAX) ||
            !chk_typed(c, pre, "mean", "model.preprocess", "floats") ||
            !chk_typed(c, pre, "std", "model.preprocess", "floats"))
            return false;
    }
    return true;
}
