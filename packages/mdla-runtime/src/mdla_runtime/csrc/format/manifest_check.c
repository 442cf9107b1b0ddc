/* manifest_check.c: the schema-checking helpers of the C reader (see manifest_check.h). */
#include "manifest_check.h"
#include "mdla_model_keys.h"
#include "mdla_ops.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
            mdla_escape_key(key, sizeof key, chk_node(c, k)->v.s, chk_node(c, k)->count);
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
    else { /* floats or strs: an array of one kind */
        uint8_t each = strcmp(kind, "strs") == 0 ? MP_STR : MP_FLOAT;
        ok = n->kind == MP_ARRAY;
        for (uint32_t i = 0, e = v + 1; ok && i < n->count; i++, e = chk_node(c, e)->next)
            ok = chk_node(c, e)->kind == each;
    }
    if (ok) return true;
    char f[MDLA_FIELD_MAX];
    char esc[MDLA_FIELD_MAX];
    mdla_escape_key(esc, sizeof esc, key, (uint32_t)strlen(key));
    mdla_fmt(f, sizeof f, "%s.%s", field, esc);
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

static bool chk_postprocess(checker *c, uint32_t post);
static bool chk_output_kinds(checker *c, uint32_t kinds);

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
        !chk_typed(c, model, "probe_patched", "model", "bool") ||
        !chk_typed(c, model, "random_weights", "model", "bool") ||
        !chk_typed(c, model, "import_path", "model", "str"))
        return false;
    uint32_t imp = mp_get(c->doc, model, "import_path");
    if (imp && !mp_key_is(chk_node(c, imp), "export") && !mp_key_is(chk_node(c, imp), "fx"))
        return chk_fail(c, "BadHeader", "model.import_path", chk_node(c, imp)->offset,
                        "expected `export` or `fx`");
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
            char esc[MDLA_FIELD_MAX];
            mdla_escape_key(esc, sizeof esc, key->v.s, key->count);
            mdla_fmt(f, sizeof f, "model.rules.%s", esc);
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
        if (!chk_keys(c, quant, "model.quant", QUANT_KEYS, QUANT_REQ)) return false;
        for (size_t k = 0; QUANT_KEYS[k]; k++)
            if (!chk_typed(c, quant, QUANT_KEYS[k], "model.quant", QUANT_TYPES[k])) return false;
        const mp_node *qr = chk_node(c, mp_get(c->doc, quant, "rounding"));
        if (!same_str(qr, r))
            return chk_fail(c, "BadHeader", "model.quant.rounding", qr->offset, "disagrees with model.rounding");
        const uint32_t gains = mp_get(c->doc, quant, "a16_gain_db"), names = mp_get(c->doc, quant, "a16");
        if (gains && chk_node(c, gains)->count != (names ? chk_node(c, names)->count : 0))
            return chk_fail(c, "BadHeader", "model.quant.a16_gain_db", chk_node(c, gains)->offset,
                            "expected one gain per model.quant.a16 name");
    }
    uint32_t pre = mp_get(c->doc, model, "preprocess");
    if (pre) {
        if (!chk_keys(c, pre, "model.preprocess", PREPROCESS_KEYS, PREPROCESS_REQ) ||
            !chk_typed(c, pre, "mode", "model.preprocess", "str") ||
            !chk_uint_list(c, mp_get(c->doc, pre, "size"), "model.preprocess.size", UINT32_MAX) ||
            !chk_typed(c, pre, "mean", "model.preprocess", "floats") ||
            !chk_typed(c, pre, "std", "model.preprocess", "floats") ||
            !chk_typed(c, pre, "channels", "model.preprocess", "str") ||
            !chk_typed(c, pre, "resize", "model.preprocess", "uint"))
            return false;
        uint32_t ch = mp_get(c->doc, pre, "channels");
        if (ch && !mp_key_is(chk_node(c, ch), "rgb") && !mp_key_is(chk_node(c, ch), "bgr"))
            return chk_fail(c, "BadHeader", "model.preprocess.channels", chk_node(c, ch)->offset,
                            "expected `rgb` or `bgr`");
    }
    uint32_t post = mp_get(c->doc, model, "postprocess");
    if (post && !chk_postprocess(c, post)) return false;
    uint32_t kinds = mp_get(c->doc, model, "output_kinds");
    return !kinds || chk_output_kinds(c, kinds);
}

/* chk_output_kinds(): mirrors format/model.py:check_output_kinds: an array of OUTPUT_KINDS
 * names (its length against the outputs is sem_output_kinds'). */
static bool chk_output_kinds(checker *c, uint32_t kinds) {
    char f[MDLA_FIELD_MAX], why[MDLA_WHY_MAX];
    const mp_node *a = chk_node(c, kinds);
    if (a->kind != MP_ARRAY) return chk_fail(c, "BadHeader", "model.output_kinds", a->offset, "expected an array");
    why[0] = 0;
    for (size_t k = 0; OUTPUT_KINDS[k]; k++) {
        size_t n = strlen(why);
        mdla_fmt(why + n, sizeof why - n, "%s%s", k ? ", " : "expected one of ", OUTPUT_KINDS[k]);
    }
    for (uint32_t i = 0, e = kinds + 1; i < a->count; i++, e = chk_node(c, e)->next) {
        const mp_node *v = chk_node(c, e);
        if (v->kind != MP_STR || !chk_in_list(v, OUTPUT_KINDS)) {
            mdla_fmt(f, sizeof f, "model.output_kinds[%u]", i);
            return chk_fail(c, "BadHeader", f, v->offset, why);
        }
    }
    return true;
}

/* chk_postprocess(): mirrors format/model.py:check_postprocess check by check, in its order:
 * keys, types, kind and order values, num_classes >= 2, aspect_ratios a non-empty list of float
 * lists (one per level), then the lengths image_size 2, scales levels + 1, box_weights 4,
 * steps one per level. */
static bool chk_postprocess(checker *c, uint32_t post) {
    static const char *const f = "model.postprocess";
    static const char *const uints[] = {"num_classes", "topk_candidates", "detections_per_img"};
    static const char *const floats[] = {"box_clip", "score_thresh", "nms_thresh"};
    char g[MDLA_FIELD_MAX + 32];
    if (!chk_keys(c, post, f, POSTPROCESS_KEYS, POSTPROCESS_REQ) ||
        !chk_typed(c, post, "kind", f, "str") || !chk_typed(c, post, "order", f, "str") ||
        !chk_typed(c, post, "clip", f, "bool"))
        return false;
    for (size_t k = 0; k < 3; k++)
        if (!chk_typed(c, post, uints[k], f, "uint")) return false;
    for (size_t k = 0; k < 3; k++)
        if (!chk_typed(c, post, floats[k], f, "float")) return false;
    if (!chk_typed(c, post, "scales", f, "floats") || !chk_typed(c, post, "box_weights", f, "floats"))
        return false;
    const mp_node *kind = chk_node(c, mp_get(c->doc, post, "kind"));
    if (!chk_in_list(kind, POSTPROCESS_KINDS))
        return chk_fail(c, "BadHeader", "model.postprocess.kind", kind->offset, "expected `ssd`");
    const mp_node *order = chk_node(c, mp_get(c->doc, post, "order"));
    if (!chk_in_list(order, HEAD_ORDERS))
        return chk_fail(c, "BadHeader", "model.postprocess.order", order->offset,
                        "expected `regression_first` or `classification_first`");
    const mp_node *classes = chk_node(c, mp_get(c->doc, post, "num_classes"));
    if (classes->v.u < 2)
        return chk_fail(c, "BadHeader", "model.postprocess.num_classes", classes->offset, "expected >= 2");
    uint32_t ratios = mp_get(c->doc, post, "aspect_ratios");
    const mp_node *rn = chk_node(c, ratios);
    if (rn->kind != MP_ARRAY || rn->count == 0)
        return chk_fail(c, "BadHeader", "model.postprocess.aspect_ratios", rn->offset, "expected a list");
    for (uint32_t k = 0, e = ratios + 1; k < rn->count; k++, e = chk_node(c, e)->next) {
        const mp_node *level = chk_node(c, e);
        bool ok = level->kind == MP_ARRAY;
        for (uint32_t i = 0, v = e + 1; ok && i < level->count; i++, v = chk_node(c, v)->next)
            ok = chk_node(c, v)->kind == MP_FLOAT;
        if (!ok) {
            mdla_fmt(g, sizeof g, "model.postprocess.aspect_ratios[%u]", k);
            return chk_fail(c, "BadHeader", g, level->offset, "expected floats");
        }
    }
    struct { const char *key; uint32_t n; bool uints; } sizes[] = {
        {"image_size", 2, true}, {"scales", rn->count + 1, false},
        {"box_weights", 4, false}, {"steps", rn->count, true}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint32_t v = mp_get(c->doc, post, sizes[k].key);
        if (!v) continue; /* steps is optional; the others are required keys */
        mdla_fmt(g, sizeof g, "model.postprocess.%s", sizes[k].key);
        if (sizes[k].uints && !chk_uint_list(c, v, g, UINT32_MAX)) return false;
        if (chk_node(c, v)->count != sizes[k].n) {
            char why[64];
            mdla_fmt(why, sizeof why, "expected %u values, got %u", sizes[k].n, chk_node(c, v)->count);
            return chk_fail(c, "BadHeader", g, chk_node(c, v)->offset, why);
        }
    }
    return true;
}


/* ---- semantics: mirrors mdla_runtime/format/semantic.py check by check, in its order, with
 * its kinds, fields and offsets (its docstring states the rules). Scales are compared as the
 * doubles in the header, before any rounding to float. ---- */

typedef struct {
    checker *c;
    const mdla_manifest *m;
    const mdla_budget *b;
    uint32_t *opnode; /* the node of operands[i] */
} sem;

/* The offset of `key`'s value in the map `e` when present, else the map's own. */
static uint64_t value_at(const checker *c, uint32_t e, const char *key) {
    uint32_t v = mp_get(c->doc, e, key);
    return chk_node(c, v ? v : e)->offset;
}

static double float_of(const checker *c, uint32_t e, const char *key) {
    uint32_t v = mp_get(c->doc, e, key);
    return v ? chk_node(c, v)->v.f : 0.0;
}

static bool scale_flaw(double v, bool positive, char *why, size_t n) {
    if (!isfinite(v)) mdla_fmt(why, n, "scale %g is not finite", v);
    else if (fabs(v) > FLT_MAX) mdla_fmt(why, n, "scale %.17g is out of float32 range", v);
    else if (!positive) {
        if (!(v < 0)) return false;
        mdla_fmt(why, n, "scale is negative");
    } else if ((double)(float)v < FLT_MIN) mdla_fmt(why, n, "scale %.17g is not a normal float32 > 0", v);
    else return false;
    return true;
}

static bool zero_point_range(int32_t t, int32_t *lo, int32_t *hi) {
    switch (t) {
    case 5: *lo = 0; *hi = 255; return true;
    case 14: *lo = -128; *hi = 127; return true;
    case 7: case 11: case 13: *lo = 0; *hi = 0; return true;
    default: return false;
    }
}

static bool sem_operand(sem *s, uint32_t i, uint64_t *total) {
    checker *c = s->c;
    const mdla_operand *o = &s->m->operands[i];
    uint32_t e = s->opnode[i];
    char f[64], g[MDLA_FIELD_MAX], why[MDLA_WHY_MAX];
    mdla_fmt(f, sizeof f, "operands[%u]", i);
    mdla_fmt(g, sizeof g, "%s.scale", f);
    if (o->type == 5 || o->type == 14 || o->type == 13 || o->type == 7) {
        if (scale_flaw(float_of(c, e, "scale"), true, why, sizeof why))
            return chk_fail(c, "BadQuantization", g, value_at(c, e, "scale"), why);
    } else if (o->type == 11) {
        uint32_t sc = mp_get(c->doc, e, "scales"), v = sc + 1;
        for (uint32_t k = 0; k < chk_node(c, sc)->count; k++, v = chk_node(c, v)->next) {
            if (scale_flaw(chk_node(c, v)->v.f, true, why, sizeof why)) {
                mdla_fmt(g, sizeof g, "%s.scales[%u]", f, k);
                return chk_fail(c, "BadQuantization", g, chk_node(c, v)->offset, why);
            }
        }
    } else if (mp_get(c->doc, e, "scale") && scale_flaw(float_of(c, e, "scale"), false, why, sizeof why)) {
        return chk_fail(c, "BadQuantization", g, value_at(c, e, "scale"), why);
    }
    int32_t lo, hi;
    if (zero_point_range(o->type, &lo, &hi) && (o->zero_point < lo || o->zero_point > hi)) {
        mdla_fmt(g, sizeof g, "%s.zero_point", f);
        mdla_fmt(why, sizeof why, "zero point %d outside %d..%d for %s", o->zero_point, lo, hi, mdla_type_name(o->type));
        return chk_fail(c, "BadQuantization", g, value_at(c, e, "zero_point"), why);
    }
    uint64_t size = o->elements * mdla_element_size(o->type); /* scalars: 0, inline */
    if (!mdla_element_size(o->type)) return true;
    uint32_t dims = mp_get(c->doc, e, "dims"), v = dims + 1;
    for (uint32_t k = 0; k < o->rank; k++, v = chk_node(c, v)->next) {
        if (o->dims[k] == 0) {
            mdla_fmt(g, sizeof g, "%s.dims[%u]", f, k);
            return chk_fail(c, "ShapeMismatch", g, chk_node(c, v)->offset,
                            "a dim of 0: shapes are static, every dim is at least 1");
        }
    }
    mdla_fmt(g, sizeof g, "%s.dims", f);
    if (size > s->b->max_tensor_bytes) {
        mdla_fmt(why, sizeof why, "%llu bytes > the per-tensor limit of %llu MiB (raise it with --max-tensor-mb)",
                 (unsigned long long)size, (unsigned long long)(s->b->max_tensor_bytes >> 20));
        return chk_fail(c, "OverBudget", g, value_at(c, e, "dims"), why);
    }
    if (*total + size > s->b->max_total_bytes) {
        mdla_fmt(why, sizeof why, "operands[0..%u] hold %llu bytes > the total limit of %llu MiB (raise it with --max-total-mb)",
                 i, (unsigned long long)(*total + size), (unsigned long long)(s->b->max_total_bytes >> 20));
        return chk_fail(c, "OverBudget", g, value_at(c, e, "dims"), why);
    }
    *total += size;
    return true;
}

/* Whether the uint list at node `arr` holds exactly `want[0..n)`. */
static bool list_is(const checker *c, uint32_t arr, const uint32_t *want, uint32_t n) {
    if (chk_node(c, arr)->count != n) return false;
    uint32_t v = arr + 1;
    for (uint32_t k = 0; k < n; k++, v = chk_node(c, v)->next)
        if (chk_node(c, v)->v.u != want[k]) return false;
    return true;
}

static bool sem_layout(sem *s, const char *f, uint32_t e, const mdla_operand *o) {
    checker *c = s->c;
    char g[MDLA_FIELD_MAX], why[MDLA_WHY_MAX];
    uint32_t pv = mp_get(c->doc, e, "perm"), n = pv ? chk_node(c, pv)->count : 0;
    uint32_t axes[MDLA_MAX_RANK], want[MDLA_MAX_RANK];
    if (n && !(o->rank <= n && n <= MDLA_MAX_RANK)) {
        mdla_fmt(g, sizeof g, "%s.perm", f);
        mdla_fmt(why, sizeof why, "%u axes for a rank-%u operand (at most %u)", n, o->rank, MDLA_MAX_RANK);
        return chk_fail(c, "BadPermutation", g, chk_node(c, pv)->offset, why);
    }
    uint32_t v = pv + 1;
    for (uint32_t j = 0; j < n; j++, v = chk_node(c, v)->next) {
        uint64_t axis = chk_node(c, v)->v.u;
        bool repeat = false;
        for (uint32_t q = 0; q < j && axis < n; q++) repeat |= axes[q] == axis;
        if (axis >= n || repeat) {
            mdla_fmt(g, sizeof g, "%s.perm[%u]", f, j);
            if (axis >= n) mdla_fmt(why, sizeof why, "axis %llu is past the last, %u", (unsigned long long)axis, n - 1);
            else mdla_fmt(why, sizeof why, "axis repeats");
            return chk_fail(c, "BadPermutation", g, chk_node(c, v)->offset, why);
        }
        axes[j] = (uint32_t)axis;
    }
    uint32_t wn = n ? n : o->rank;
    for (uint32_t j = 0; j < wn; j++) {
        if (!n) want[j] = o->dims[j];
        else want[axes[j]] = j < n - o->rank ? 1 : o->dims[j - (n - o->rank)];
    }
    uint32_t ms = mp_get(c->doc, e, "model_shape");
    bool same = ms ? list_is(c, ms, want, wn) : wn == o->rank && memcmp(want, o->dims, wn * sizeof *want) == 0;
    if (!same) {
        mdla_fmt(g, sizeof g, "%s.model_shape", f);
        return chk_fail(c, "ShapeMismatch", g, value_at(c, e, "model_shape"),
                        "model_shape is not the operand's dims through perm");
    }
    return true;
}

static bool sem_io(sem *s, const char *key, int64_t *seen) {
    checker *c = s->c;
    const mdla_manifest *m = s->m;
    bool inputs = strcmp(key, "inputs") == 0;
    const mdla_io *ios = inputs ? m->inputs : m->outputs;
    uint32_t count = inputs ? m->n_inputs : m->n_outputs, e = mp_get(c->doc, 0, key) + 1;
    char f[64], g[MDLA_FIELD_MAX], why[MDLA_WHY_MAX];
    for (uint32_t k = 0; k < count; k++, e = chk_node(c, e)->next) {
        uint32_t idx = ios[k].operand;
        const mdla_operand *o = &m->operands[idx];
        mdla_fmt(f, sizeof f, "%s[%u]", key, k);
        mdla_fmt(g, sizeof g, "%s.operand", f);
        uint64_t at = value_at(c, e, "operand");
        const bool real = !inputs && o->type == 3; /* TENSOR_FLOAT32: a float region's output */
        const bool wide = !inputs && o->type == 7; /* TENSOR_QUANT16_SYMM: a 16x8 op's output */
        if (o->type != 14 && o->type != 13 && !real && !wide) {
            mdla_fmt(why, sizeof why,
                     "operand %u is %s; model inputs are int8 tensors, outputs int8, int16 (TENSOR_QUANT16_SYMM) or "
                     "float32 tensors",
                     idx, mdla_type_name(o->type));
            return chk_fail(c, "BadReference", g, at, why);
        }
        if (inputs && o->has_data) {
            mdla_fmt(why, sizeof why, "operand %u is a constant", idx);
            return chk_fail(c, "BadReference", g, at, why);
        }
        if (seen[idx] >= 0) {
            mdla_fmt(why, sizeof why, "operand %u is already %s[%lld]", idx, key, (long long)seen[idx]);
            return chk_fail(c, "DuplicateEntry", g, at, why);
        }
        seen[idx] = k;
        double scale = float_of(c, e, "scale"), own = float_of(c, s->opnode[idx], "scale");
        bool flaw = real ? scale != 0.0 : scale_flaw(scale, true, why, sizeof why);
        if (real && flaw) mdla_fmt(why, sizeof why, "a float32 output has scale 0");
        if (!flaw && scale != own) {
            flaw = true;
            mdla_fmt(why, sizeof why, "scale %.17g is not operand %u's %.17g", scale, idx, own);
        }
        if (flaw) {
            mdla_fmt(g, sizeof g, "%s.scale", f);
            return chk_fail(c, "BadQuantization", g, value_at(c, e, "scale"), why);
        }
        if (ios[k].zero_point != o->zero_point || (real && ios[k].zero_point != 0)) {
            mdla_fmt(g, sizeof g, "%s.zero_point", f);
            if (ios[k].zero_point != o->zero_point)
                mdla_fmt(why, sizeof why, "zero point %d is not operand %u's", ios[k].zero_point, idx);
            else
                mdla_fmt(why, sizeof why, "a float32 output has zero point 0");
            return chk_fail(c, "BadQuantization", g, value_at(c, e, "zero_point"), why);
        }
        uint32_t sh = mp_get(c->doc, e, "shape");
        if (sh && !list_is(c, sh, o->dims, o->rank)) {
            mdla_fmt(g, sizeof g, "%s.shape", f);
            mdla_fmt(why, sizeof why, "shape is not operand %u's dims", idx);
            return chk_fail(c, "ShapeMismatch", g, chk_node(c, sh)->offset, why);
        }
        if (!sem_layout(s, f, e, o)) return false;
    }
    return true;
}

/* A model.postprocess record with L levels (len(aspect_ratios)) reads 2L model outputs. */
static bool sem_postprocess(sem *s) {
    checker *c = s->c;
    uint32_t post = mp_get(c->doc, mp_get(c->doc, 0, "model"), "postprocess");
    if (!post) return true;
    uint32_t levels = chk_node(c, mp_get(c->doc, post, "aspect_ratios"))->count;
    if (s->m->n_outputs == 2 * levels) return true;
    char why[MDLA_WHY_MAX];
    mdla_fmt(why, sizeof why, "model.postprocess decodes %u feature level(s) from %u outputs; the model has %u",
             levels, 2 * levels, s->m->n_outputs);
    return chk_fail(c, "CountMismatch", "outputs", chk_node(c, mp_get(c->doc, 0, "outputs"))->offset, why);
}

/* A model.output_kinds list names one kind per model output. */
static bool sem_output_kinds(sem *s) {
    checker *c = s->c;
    uint32_t kinds = mp_get(c->doc, mp_get(c->doc, 0, "model"), "output_kinds");
    if (!kinds || chk_node(c, kinds)->count == s->m->n_outputs) return true;
    char why[MDLA_WHY_MAX];
    mdla_fmt(why, sizeof why, "model.output_kinds names %u kind(s); the model has %u outputs",
             chk_node(c, kinds)->count, s->m->n_outputs);
    return chk_fail(c, "CountMismatch", "model.output_kinds", chk_node(c, kinds)->offset, why);
}

static bool sem_preprocess(sem *s) {
    checker *c = s->c;
    uint32_t model = mp_get(c->doc, 0, "model");
    if (!mp_get(c->doc, model, "preprocess")) return true;
    uint32_t arr = mp_get(c->doc, 0, "inputs");
    char why[MDLA_WHY_MAX];
    if (s->m->n_inputs != 1) {
        mdla_fmt(why, sizeof why, "model.preprocess feeds one image input; the model has %u inputs", s->m->n_inputs);
        return chk_fail(c, "CountMismatch", "inputs", chk_node(c, arr)->offset, why);
    }
    /* model_shape (or the operand's dims) == [1, 3, size...] */
    uint32_t e = arr + 1, ms = mp_get(c->doc, e, "model_shape");
    uint32_t size = mp_get(c->doc, mp_get(c->doc, model, "preprocess"), "size"), v = size + 1;
    const mdla_operand *o = &s->m->operands[s->m->inputs[0].operand];
    uint32_t n = chk_node(c, size)->count, rank = ms ? chk_node(c, ms)->count : o->rank;
    bool same = rank == n + 2;
    uint32_t w = ms + 1;
    for (uint32_t k = 0; same && k < rank; k++) {
        uint64_t have = ms ? chk_node(c, w)->v.u : o->dims[k];
        uint64_t want = k == 0 ? 1 : k == 1 ? 3 : chk_node(c, v)->v.u;
        same = have == want;
        if (ms) w = chk_node(c, w)->next;
        if (k >= 2) v = chk_node(c, v)->next;
    }
    if (!same)
        return chk_fail(c, "ShapeMismatch", "inputs[0].model_shape", value_at(c, e, "model_shape"),
                        "model_shape is not the (1, 3, H, W) image model.preprocess makes");
    return true;
}

static bool sem_dataflow(sem *s, uint8_t *is_input, int64_t *written) {
    checker *c = s->c;
    const mdla_manifest *m = s->m;
    char g[MDLA_FIELD_MAX], why[MDLA_WHY_MAX];
    for (uint32_t k = 0; k < m->n_inputs; k++) is_input[m->inputs[k].operand] = 1;
    uint32_t e = mp_get(c->doc, 0, "operations") + 1;
    for (uint32_t i = 0; i < m->n_operations; i++, e = chk_node(c, e)->next) {
        const mdla_operation *op = &m->operations[i];
        uint32_t v = mp_get(c->doc, e, "inputs") + 1;
        for (uint32_t k = 0; k < op->n_inputs; k++, v = chk_node(c, v)->next) {
            uint32_t x = op->inputs[k];
            const mdla_operand *o = &m->operands[x];
            if (!(o->has_data || o->has_value || is_input[x] || written[x] >= 0)) {
                mdla_fmt(g, sizeof g, "operations[%u].inputs[%u]", i, k);
                mdla_fmt(why, sizeof why, "operand %u is read before an operation writes it", x);
                return chk_fail(c, "BadReference", g, chk_node(c, v)->offset, why);
            }
        }
        v = mp_get(c->doc, e, "outputs") + 1;
        for (uint32_t k = 0; k < op->n_outputs; k++, v = chk_node(c, v)->next) {
            uint32_t x = op->outputs[k];
            const mdla_operand *o = &m->operands[x];
            mdla_fmt(g, sizeof g, "operations[%u].outputs[%u]", i, k);
            if (o->has_data || o->has_value || is_input[x]) {
                mdla_fmt(why, sizeof why, "operand %u is %s", x, is_input[x] ? "a model input" : "a constant");
                return chk_fail(c, "BadReference", g, chk_node(c, v)->offset, why);
            }
            if (written[x] >= 0) {
                mdla_fmt(why, sizeof why, "operand %u is already written by operations[%lld]", x, (long long)written[x]);
                return chk_fail(c, "DuplicateEntry", g, chk_node(c, v)->offset, why);
            }
            written[x] = i;
        }
    }
    uint32_t arr = mp_get(c->doc, 0, "outputs");
    e = arr + 1;
    for (uint32_t k = 0; k < m->n_outputs; k++, e = chk_node(c, e)->next) {
        uint32_t x = m->outputs[k].operand;
        if (written[x] < 0) {
            mdla_fmt(g, sizeof g, "outputs[%u].operand", k);
            mdla_fmt(why, sizeof why, "operand %u is written by no operation", x);
            return chk_fail(c, "BadReference", g, value_at(c, e, "operand"), why);
        }
    }
    if (!m->n_outputs) return chk_fail(c, "CountMismatch", "outputs", chk_node(c, arr)->offset, "a model has at least one output");
    return true;
}

static bool in_list(const uint32_t *xs, uint32_t n, uint32_t x) {
    for (uint32_t k = 0; k < n; k++)
        if (xs[k] == x) return true;
    return false;
}

/* The node of element k of the list `key` of partitions[p] (`key` NULL: the partition map). */
static uint32_t part_node(const checker *c, uint32_t p, const char *key, int64_t k) {
    uint32_t e = mp_get(c->doc, 0, "partitions") + 1;
    for (uint32_t i = 0; i < p; i++) e = chk_node(c, e)->next;
    if (!key) return e;
    uint32_t v = mp_get(c->doc, e, key);
    if (k < 0) return v;
    v += 1;
    for (int64_t i = 0; i < k; i++) v = chk_node(c, v)->next;
    return v;
}

static bool part_fail(sem *s, const char *kind, uint32_t p, const char *key, int64_t k,
                      const char *why) {
    char g[MDLA_FIELD_MAX];
    if (k >= 0) mdla_fmt(g, sizeof g, "partitions[%u].%s[%lld]", p, key, (long long)k);
    else mdla_fmt(g, sizeof g, "partitions[%u].%s", p, key);
    return chk_fail(s->c, kind, g, chk_node(s->c, part_node(s->c, p, key, k))->offset, why);
}

/* Check 6 of mdla_runtime/format/semantic.py (format 3): `written[x]` is the operation writing
 * operand x (sem_dataflow's), `is_input[x]` whether x is a model input. */
static bool sem_partitions(sem *s, const uint8_t *is_input, const int64_t *written) {
    checker *c = s->c;
    const mdla_manifest *m = s->m;
    char why[MDLA_WHY_MAX];
    size_t no = m->n_operations ? m->n_operations : 1, nx = m->n_operands ? m->n_operands : 1;
    int64_t *owner = malloc(no * sizeof *owner), *writer = malloc(nx * sizeof *writer);
    uint32_t *mark = calloc(nx, sizeof *mark);
    bool ok = owner && writer && mark;
    if (!ok) chk_fail(c, "BadHeader", "partitions", 0, "out of memory");
    for (size_t i = 0; ok && i < no; i++) owner[i] = -1;
    for (uint32_t p = 0; ok && p < m->n_partitions; p++) {
        const mdla_partition *pt = &m->partitions[p];
        if (!pt->n_operations) {
            ok = part_fail(s, "CountMismatch", p, "operations", -1, "a partition holds at least one operation");
            break;
        }
        for (uint32_t k = 0; ok && k < pt->n_operations; k++) {
            uint32_t i = pt->operations[k];
            if (owner[i] >= 0) {
                mdla_fmt(why, sizeof why, "operations[%u] is already in partitions[%lld]", i, (long long)owner[i]);
                ok = part_fail(s, "DuplicateEntry", p, "operations", k, why);
                break;
            }
            owner[i] = p;
            int32_t code = m->operations[i].code;
            bool cpu = pt->device.n == 3 && memcmp(pt->device.s, MDLA_CPU_DEVICE, 3) == 0;
            if (code >= 0 && mdla_host_op((uint64_t)code) && !cpu) {
                mdla_fmt(why, sizeof why, "operations[%u] is %s, a host operation: only a `cpu` partition runs it, not `%.*s`",
                         i, mdla_host_op_name((uint64_t)code), (int)pt->device.n, pt->device.s);
                ok = part_fail(s, "BadReference", p, "operations", k, why);
            }
        }
    }
    for (uint32_t i = 0; ok && i < m->n_operations; i++) {
        if (owner[i] < 0) {
            mdla_fmt(why, sizeof why, "operations[%u] is in no partition", i);
            ok = chk_fail(c, "CountMismatch", "partitions", chk_node(c, mp_get(c->doc, 0, "partitions"))->offset, why);
        }
    }
    for (size_t x = 0; ok && x < nx; x++) writer[x] = x < m->n_operands && written[x] >= 0 ? owner[written[x]] : -1;
    uint32_t stamp = 0;
    for (uint32_t p = 0; ok && p < m->n_partitions; p++) {
        const mdla_partition *pt = &m->partitions[p];
        for (int out = 0; ok && out < 2; out++) {
            const char *key = out ? "outputs" : "inputs";
            const uint32_t *xs = out ? pt->outputs : pt->inputs;
            uint32_t n = out ? pt->n_outputs : pt->n_inputs;
            stamp++;
            for (uint32_t k = 0; ok && k < n; k++) {
                uint32_t x = xs[k];
                if (mark[x] == stamp) {
                    mdla_fmt(why, sizeof why, "operand %u is listed twice", x);
                    ok = part_fail(s, "DuplicateEntry", p, key, k, why);
                    break;
                }
                mark[x] = stamp;
                const mdla_operand *o = &m->operands[x];
                int64_t q = writer[x];
                if (o->has_data || o->has_value) {
                    mdla_fmt(why, sizeof why, "operand %u is a constant or scalar; only activations cross partitions", x);
                    ok = part_fail(s, "BadReference", p, key, k, why);
                } else if (out) {
                    if (q != (int64_t)p) {
                        mdla_fmt(why, sizeof why, "operand %u is not written by partitions[%u]", x, p);
                        ok = part_fail(s, "BadReference", p, key, k, why);
                    }
                } else if (!is_input[x]) {
                    if (q < 0) {
                        mdla_fmt(why, sizeof why, "operand %u is written by no operation", x);
                        ok = part_fail(s, "BadReference", p, key, k, why);
                    } else if (q >= (int64_t)p) {
                        mdla_fmt(why, sizeof why, "operand %u is written by partitions[%lld], which does not run before partitions[%u]",
                                 x, (long long)q, p);
                        ok = part_fail(s, "PartitionCycle", p, key, k, why);
                    } else if (!in_list(m->partitions[q].outputs, m->partitions[q].n_outputs, x)) {
                        mdla_fmt(why, sizeof why, "operand %u is not among the outputs of partitions[%lld]", x, (long long)q);
                        ok = part_fail(s, "BadReference", p, key, k, why);
                    }
                }
            }
        }
        for (uint32_t k = 0; ok && k < pt->n_operations; k++) {
            const mdla_operation *op = &m->operations[pt->operations[k]];
            for (uint32_t j = 0; ok && j < op->n_inputs; j++) {
                uint32_t x = op->inputs[j];
                const mdla_operand *o = &m->operands[x];
                if (o->has_data || o->has_value || writer[x] == (int64_t)p ||
                    in_list(pt->inputs, pt->n_inputs, x))
                    continue;
                mdla_fmt(why, sizeof why, "operations[%u] reads operand %u from outside partitions[%u], whose inputs do not list it",
                         pt->operations[k], x, p);
                ok = part_fail(s, "BadReference", p, "operations", k, why);
            }
        }
    }
    uint32_t e = mp_get(c->doc, 0, "outputs") + 1;
    for (uint32_t k = 0; ok && k < m->n_outputs; k++, e = chk_node(c, e)->next) {
        uint32_t x = m->outputs[k].operand;
        int64_t q = writer[x];
        if (!in_list(m->partitions[q].outputs, m->partitions[q].n_outputs, x)) {
            char g[MDLA_FIELD_MAX];
            mdla_fmt(g, sizeof g, "outputs[%u].operand", k);
            mdla_fmt(why, sizeof why, "operand %u is not among the outputs of partitions[%lld], which writes it", x, (long long)q);
            ok = chk_fail(c, "BadReference", g, value_at(c, e, "operand"), why);
        }
    }
    free(owner);
    free(writer);
    free(mark);
    return ok;
}

bool chk_semantics(checker *c, const mdla_manifest *m, const mdla_budget *b) {
    size_t n = m->n_operands ? m->n_operands : 1;
    sem s = {c, m, b, malloc(n * sizeof(uint32_t))};
    int64_t *seen = malloc(n * sizeof *seen);
    uint8_t *is_input = calloc(n, 1);
    bool ok = s.opnode && seen && is_input;
    if (!ok) chk_fail(c, "BadHeader", "operands", 0, "out of memory");
    uint32_t e = mp_get(c->doc, 0, "operands") + 1;
    for (uint32_t i = 0; ok && i < m->n_operands; i++, e = chk_node(c, e)->next) s.opnode[i] = e;
    uint64_t total = 0;
    for (uint32_t i = 0; ok && i < m->n_operands; i++) ok = sem_operand(&s, i, &total);
    static const char *const lists[] = {"inputs", "outputs"};
    for (int k = 0; ok && k < 2; k++) {
        for (size_t i = 0; i < n; i++) seen[i] = -1;
        ok = sem_io(&s, lists[k], seen);
    }
    ok = ok && sem_preprocess(&s);
    ok = ok && sem_postprocess(&s);
    for (size_t i = 0; ok && i < n; i++) seen[i] = -1; /* now: the operation writing operand i */
    ok = ok && sem_dataflow(&s, is_input, seen);
    ok = ok && sem_output_kinds(&s);
    ok = ok && (m->version < 3 || sem_partitions(&s, is_input, seen));
    ok = ok && chk_compute(c, m, b);
    free(s.opnode);
    free(seen);
    free(is_input);
    return ok;
}
