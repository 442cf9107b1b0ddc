/* manifest.c: validation and decoding of .mdla files; mirrors mdla_runtime/validate.py. */
#include "manifest.h"
#include "manifest_check.h"
#include "signature.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* double -> float without undefined behaviour: out-of-range values become +-inf explicitly. */
static float to_f32(double d) {
    if (d > FLT_MAX) return INFINITY;
    if (d < -FLT_MAX) return -INFINITY;
    return (float)d;
}

const char *mdla_type_name(int32_t type) {
    switch (type) {
    case 0: return "FLOAT32";
    case 1: return "INT32";
    case 6: return "BOOL";
    case 3: return "TENSOR_FLOAT32";
    case 4: return "TENSOR_INT32";
    case 9: return "TENSOR_BOOL8";
    case 5: return "TENSOR_QUANT8_ASYMM";
    case 11: return "TENSOR_QUANT8_SYMM_PER_CHANNEL";
    case 13: return "TENSOR_QUANT8_SYMM";
    case 14: return "TENSOR_QUANT8_ASYMM_SIGNED";
    case 7: return "TENSOR_QUANT16_SYMM";
    default: return NULL;
    }
}

size_t mdla_element_size(int32_t type) {
    switch (type) {
    case 3: case 4: return 4;
    case 5: case 9: case 11: case 13: case 14: return 1;
    case 7: return 2;
    default: return 0;
    }
}

static bool is_scalar(int32_t t) { return t == 0 || t == 1 || t == 6; }

/* Operand counts from the operation's forms (mdla_ops.h, generated from mdla_ir/schema.py); the
 * types are the adapter's to check. Codes without forms take any count. */
bool mdla_arity_ok(int32_t code, uint32_t ni, uint32_t no) {
    return mdla_sig_ok(code, ni, NULL, NULL, no, NULL, NULL);
}

/* A Neuron operation code, or from format 3 on a host operation's (a cpu partition's). */
static bool op_known(const mp_node *n, uint32_t version) {
    return n->kind == MP_UINT && (mdla_op_available(n->v.u) || (version >= 3 && mdla_host_op(n->v.u)));
}

static const char *const OPERAND_KEYS[] = {"type", "dims", "name", "scale", "zero_point",
                                           "channel_dim", "scales", "data", "value", NULL};
static const char *const OPERAND_REQ[] = {"type", "dims", NULL};

static bool operand(checker *c, uint32_t e, uint32_t i, uint64_t data_size, mdla_operand *o) {
    char f[MDLA_FIELD_MAX], g[MDLA_FIELD_MAX + 16];
    mdla_fmt(f, sizeof f, "operands[%u]", i);
    if (!chk_keys(c, e, f, OPERAND_KEYS, OPERAND_REQ)) return false;
    const mp_node *t = chk_node(c, mp_get(c->doc, e, "type"));
    if (t->kind != MP_UINT || !mdla_type_name(t->v.u > 1000000 ? -1 : (int32_t)t->v.u)) {
        mdla_fmt(g, sizeof g, "%s.type", f);
        return chk_fail(c, "UnknownTypeCode", g, t->offset, "unknown operand type code");
    }
    o->type = (int32_t)t->v.u;
    uint32_t dims = mp_get(c->doc, e, "dims");
    mdla_fmt(g, sizeof g, "%s.dims", f);
    if (!chk_uint_list(c, dims, g, UINT32_MAX)) return false;
    if (chk_node(c, dims)->count > MDLA_MAX_RANK) return chk_fail(c, "DimsOverflow", g, chk_node(c, dims)->offset, "rank > 8");
    o->rank = chk_node(c, dims)->count;
    uint64_t count = 1;
    bool zero = false, over = false;
    for (uint32_t k = 0; k < o->rank; k++) {
        o->dims[k] = (uint32_t)chk_list_at(c, dims, k);
        if (o->dims[k] == 0) zero = true;
        else if (!over) {
            count *= o->dims[k];
            if (count > MDLA_MAX_ELEMENTS) over = true;
        }
    }
    if (!zero && over) return chk_fail(c, "DimsOverflow", g, chk_node(c, dims)->offset, "too many elements");
    o->elements = zero ? 0 : count;
    if (!chk_typed(c, e, "name", f, "str") || !chk_typed(c, e, "scale", f, "float") ||
        !chk_typed(c, e, "zero_point", f, "int") || !chk_typed(c, e, "channel_dim", f, "uint") ||
        !chk_typed(c, e, "scales", f, "floats"))
        return false;
    o->name = chk_str_of(c, e, "name");
    uint32_t v;
    if ((v = mp_get(c->doc, e, "scale"))) o->scale = to_f32(chk_node(c, v)->v.f);
    if ((v = mp_get(c->doc, e, "zero_point")))
        o->zero_point = chk_node(c, v)->kind == MP_UINT ? (int32_t)chk_node(c, v)->v.u : (int32_t)chk_node(c, v)->v.i;
    uint32_t value = mp_get(c->doc, e, "value"), data = mp_get(c->doc, e, "data");
    if (is_scalar(o->type)) {
        if (o->rank || data || !value)
            return chk_fail(c, "BadHeader", f, chk_node(c, e)->offset, "a scalar has dims [], an inline value and no data");
        if (!chk_typed(c, e, "value", f, o->type == 1 ? "int" : o->type == 0 ? "float" : "bool"))
            return false;
        const mp_node *n = chk_node(c, value);
        o->has_value = true;
        if (o->type == 1) o->i32 = n->kind == MP_UINT ? (int32_t)n->v.u : (int32_t)n->v.i;
        else if (o->type == 0) o->f32 = to_f32(n->v.f);
        else o->b8 = n->v.b;
    } else if (value) {
        mdla_fmt(g, sizeof g, "%s.value", f);
        return chk_fail(c, "BadHeader", g, chk_node(c, value)->offset, "only scalars carry a value");
    }
    uint32_t cd = mp_get(c->doc, e, "channel_dim"), sc = mp_get(c->doc, e, "scales");
    o->per_channel = o->type == 11;
    if (o->per_channel != (cd != 0) || o->per_channel != (sc != 0))
        return chk_fail(c, "BadHeader", f, chk_node(c, e)->offset, "channel_dim and scales go with per-channel types only");
    if (o->per_channel) {
        if (chk_node(c, cd)->v.u >= o->rank) {
            mdla_fmt(g, sizeof g, "%s.channel_dim", f);
            return chk_fail(c, "BadHeader", g, chk_node(c, cd)->offset, "past the rank");
        }
        o->channel_dim = (uint32_t)chk_node(c, cd)->v.u;
        if (chk_node(c, sc)->count != o->dims[o->channel_dim]) {
            mdla_fmt(g, sizeof g, "%s.scales", f);
            return chk_fail(c, "CountMismatch", g, chk_node(c, sc)->offset, "one scale per channel");
        }
        o->n_scales = chk_node(c, sc)->count;
        o->scales = calloc(o->n_scales ? o->n_scales : 1, sizeof(float));
        if (!o->scales) return chk_fail(c, "BadHeader", f, chk_node(c, sc)->offset, "out of memory");
        uint32_t s = sc + 1;
        for (uint32_t k = 0; k < o->n_scales; k++, s = chk_node(c, s)->next) o->scales[k] = to_f32(chk_node(c, s)->v.f);
    }
    if (!data) return true;
    mdla_fmt(g, sizeof g, "%s.data", f);
    if (!chk_uint_list(c, data, g, UINT64_MAX)) return false;
    uint64_t at = chk_node(c, data)->offset;
    if (chk_node(c, data)->count != 2) return chk_fail(c, "BadHeader", g, at, "a slice is [offset, length]");
    uint64_t off = chk_list_at(c, data, 0), len = chk_list_at(c, data, 1);
    if (off % MDLA_ALIGN) return chk_fail(c, "Misaligned", g, at, "offset is not a multiple of 64");
    if (off > data_size || len > data_size - off)
        return chk_fail(c, "OffsetOutOfBounds", g, at, "slice reaches past data_size");
    if (len != o->elements * mdla_element_size(o->type))
        return chk_fail(c, "CountMismatch", g, at, "slice length does not match dims");
    o->has_data = true;
    o->data_offset = off;
    o->data_len = len;
    return true;
}

static const char *const OPERATION_KEYS[] = {"code", "inputs", "outputs", "name", NULL};
static const char *const OPERATION_REQ[] = {"code", "inputs", "outputs", NULL};

static bool index_list(checker *c, uint32_t arr, const char *field, uint32_t n, uint32_t **out) {
    if (!chk_uint_list(c, arr, field, UINT32_MAX)) return false;
    uint32_t count = chk_node(c, arr)->count, e = arr + 1;
    *out = calloc(count ? count : 1, sizeof(uint32_t));
    if (!*out) return chk_fail(c, "BadHeader", field, chk_node(c, arr)->offset, "out of memory");
    for (uint32_t k = 0; k < count; k++, e = chk_node(c, e)->next) {
        if (chk_node(c, e)->v.u >= n) {
            char f[MDLA_FIELD_MAX + 16];
            mdla_fmt(f, sizeof f, "%s[%u]", field, k);
            return chk_fail(c, "BadIndex", f, chk_node(c, e)->offset, "operand index past the operand list");
        }
        (*out)[k] = (uint32_t)chk_node(c, e)->v.u;
    }
    return true;
}

static bool operation(checker *c, uint32_t e, uint32_t i, uint32_t n, uint32_t version,
                      mdla_operation *op) {
    char f[MDLA_FIELD_MAX], g[MDLA_FIELD_MAX + 16];
    mdla_fmt(f, sizeof f, "operations[%u]", i);
    if (!chk_keys(c, e, f, OPERATION_KEYS, OPERATION_REQ)) return false;
    const mp_node *code = chk_node(c, mp_get(c->doc, e, "code"));
    mdla_fmt(g, sizeof g, "%s.code", f);
    if (!op_known(code, version)) return chk_fail(c, "UnknownOpCode", g, code->offset, "not a Neuron operation code");
    op->code = (int32_t)code->v.u;
    uint32_t ins = mp_get(c->doc, e, "inputs"), outs = mp_get(c->doc, e, "outputs");
    mdla_fmt(g, sizeof g, "%s.inputs", f);
    if (!index_list(c, ins, g, n, &op->inputs)) return false;
    op->n_inputs = chk_node(c, ins)->count;
    mdla_fmt(g, sizeof g, "%s.outputs", f);
    if (!index_list(c, outs, g, n, &op->outputs)) return false;
    op->n_outputs = chk_node(c, outs)->count;
    if (!mdla_arity_ok(op->code, op->n_inputs, op->n_outputs)) {
        mdla_fmt(g, sizeof g, "%s.inputs", f);
        return chk_fail(c, "OperandCountMismatch", g, chk_node(c, ins)->offset, "wrong operand count for this operation");
    }
    if (!chk_typed(c, e, "name", f, "str")) return false;
    op->name = chk_str_of(c, e, "name");
    return true;
}

static const char *const IO_KEYS[] = {"operand", "name", "scale", "zero_point", "layout",
                                      "shape", "perm", "model_shape", NULL};
static const char *const IO_REQ[] = {"operand", NULL};

static bool io(checker *c, uint32_t e, const char *f, uint32_t n, mdla_io *out) {
    char g[MDLA_FIELD_MAX + 16];
    if (!chk_keys(c, e, f, IO_KEYS, IO_REQ) || !chk_typed(c, e, "operand", f, "uint")) return false;
    const mp_node *op = chk_node(c, mp_get(c->doc, e, "operand"));
    if (op->v.u >= n) {
        mdla_fmt(g, sizeof g, "%s.operand", f);
        return chk_fail(c, "BadIndex", g, op->offset, "operand index past the operand list");
    }
    out->operand = (uint32_t)op->v.u;
    if (!chk_typed(c, e, "name", f, "str") || !chk_typed(c, e, "scale", f, "float") ||
        !chk_typed(c, e, "zero_point", f, "int") || !chk_typed(c, e, "layout", f, "str"))
        return false;
    static const char *const lists[] = {"shape", "perm", "model_shape"};
    for (int k = 0; k < 3; k++) {
        uint32_t v = mp_get(c->doc, e, lists[k]);
        mdla_fmt(g, sizeof g, "%s.%s", f, lists[k]);
        if (v && !chk_uint_list(c, v, g, UINT32_MAX)) return false;
    }
    out->name = chk_str_of(c, e, "name");
    uint32_t v;
    if ((v = mp_get(c->doc, e, "scale"))) out->scale = to_f32(chk_node(c, v)->v.f);
    if ((v = mp_get(c->doc, e, "zero_point")))
        out->zero_point = chk_node(c, v)->kind == MP_UINT ? (int32_t)chk_node(c, v)->v.u : (int32_t)chk_node(c, v)->v.i;
    return true;
}

typedef struct { uint64_t off, len; uint32_t idx; } slice;

static int slice_cmp(const void *a, const void *b) {
    const slice *x = a, *y = b;
    if (x->off != y->off) return x->off < y->off ? -1 : 1;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint64_t rd_le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned k = n; k-- > 0;) v = (v << 8) | p[k];
    return v;
}

static bool preamble(const uint8_t *buf, size_t n, mdla_manifest *m, mdla_error *err) {
    size_t head = n < 8 ? n : 8;
    if (memcmp(buf, MDLA_MAGIC, head) != 0) {
        mdla_fail(err, "BadMagic", "magic", 0, "not a .mdla file");
        return false;
    }
    if (n < MDLA_PREAMBLE) {
        mdla_fail(err, "TruncatedHeader", "preamble", n, "file has %zu bytes, the preamble 20", n);
        return false;
    }
    uint64_t version = rd_le(buf + 8, 4);
    if (version < MDLA_FORMAT_OLDEST) {
        mdla_fail(err, "FutureVersion", "version", 8,
                  "format version %llu, rebuild with `workbench compile` (this reader reads format %u)",
                  (unsigned long long)version, MDLA_FORMAT_VERSION);
        return false;
    }
    if (version > MDLA_FORMAT_VERSION) {
        mdla_fail(err, "FutureVersion", "version", 8,
                  "format version %llu is newer than this reader's %u: update mdla",
                  (unsigned long long)version, MDLA_FORMAT_VERSION);
        return false;
    }
    uint64_t hlen = rd_le(buf + 12, 8);
    if (hlen > MDLA_MAX_HEADER) {
        mdla_fail(err, "HeaderTooLarge", "header_length", 12, "%llu bytes > 64 MiB",
                  (unsigned long long)hlen);
        return false;
    }
    if (MDLA_PREAMBLE + hlen > n) {
        mdla_fail(err, "TruncatedHeader", "header", n, "header of %llu bytes, file ends at %zu",
                  (unsigned long long)hlen, n);
        return false;
    }
    m->version = (uint32_t)version;
    m->header_length = hlen;
    m->data_start = (MDLA_PREAMBLE + hlen + MDLA_ALIGN - 1) / MDLA_ALIGN * MDLA_ALIGN;
    return true;
}

static const char *const TOP[] = {"model", "operands", "operations", "inputs", "outputs",
                                  "data_size", "partitions", NULL};
static const char *const TOP_V2[] = {"model", "operands", "operations", "inputs", "outputs",
                                     "data_size", NULL};

static bool sections(checker *c, size_t size, mdla_manifest *m) {
    const char *const *top = m->version >= 3 ? TOP : TOP_V2;
    if (!chk_keys(c, 0, "header", top, top)) return false;
    static const char *const lists[] = {"operands", "operations", "inputs", "outputs", "partitions"};
    uint32_t model = mp_get(c->doc, 0, "model");
    if (chk_node(c, model)->kind != MP_MAP) return chk_fail(c, "BadHeader", "model", chk_node(c, model)->offset, "expected dict");
    for (int k = 0; k < (m->version >= 3 ? 5 : 4); k++) {
        const mp_node *v = chk_node(c, mp_get(c->doc, 0, lists[k]));
        if (v->kind != MP_ARRAY) return chk_fail(c, "BadHeader", lists[k], v->offset, "expected list");
    }
    if (!chk_model(c, model, &m->rounding)) return false;
    const mp_node *ds = chk_node(c, mp_get(c->doc, 0, "data_size"));
    if (ds->kind != MP_UINT) return chk_fail(c, "BadHeader", "data_size", ds->offset, "expected an unsigned int");
    uint64_t have = size - m->data_start;
    if (ds->v.u > have) return chk_fail(c, "TruncatedData", "data_size", ds->offset, "data section is shorter than data_size");
    if (ds->v.u < have) return chk_fail(c, "CountMismatch", "data_size", ds->offset, "trailing bytes after the data section");
    m->data_size = ds->v.u;
    m->model_name = chk_str_of(c, model, "name");
    return true;
}

static bool operands(checker *c, const uint8_t *buf, mdla_manifest *m) {
    uint32_t ops = mp_get(c->doc, 0, "operands");
    m->n_operands = chk_node(c, ops)->count;
    m->operands = calloc(m->n_operands ? m->n_operands : 1, sizeof *m->operands);
    slice *sl = calloc(m->n_operands ? m->n_operands : 1, sizeof *sl);
    uint32_t *node = calloc(m->n_operands ? m->n_operands : 1, sizeof *node);
    bool ok = m->operands && sl && node;
    if (!ok) chk_fail(c, "BadHeader", "operands", chk_node(c, ops)->offset, "out of memory");
    uint32_t ns = 0, e = ops + 1;
    for (uint32_t i = 0; ok && i < m->n_operands; i++, e = chk_node(c, e)->next) {
        mdla_operand *o = &m->operands[i];
        node[i] = e;
        ok = operand(c, e, i, m->data_size, o);
        if (ok && o->has_data) {
            o->data = buf + m->data_start + o->data_offset;
            if (o->data_len) sl[ns++] = (slice){o->data_offset, o->data_len, i};
        }
    }
    if (ok) qsort(sl, ns, sizeof *sl, slice_cmp);
    for (uint32_t k = 1; ok && k < ns; k++) {
        if (sl[k - 1].off + sl[k - 1].len > sl[k].off) {
            char f[MDLA_FIELD_MAX];
            mdla_fmt(f, sizeof f, "operands[%u].data", sl[k].idx);
            ok = chk_fail(c, "OverlappingSlices", f, chk_node(c, mp_get(c->doc, node[sl[k].idx], "data"))->offset,
                      "slice starts inside the previous one");
        }
    }
    free(sl);
    free(node);
    return ok;
}

static bool operations(checker *c, mdla_manifest *m) {
    uint32_t arr = mp_get(c->doc, 0, "operations");
    m->n_operations = chk_node(c, arr)->count;
    m->operations = calloc(m->n_operations ? m->n_operations : 1, sizeof *m->operations);
    if (!m->operations) return chk_fail(c, "BadHeader", "operations", chk_node(c, arr)->offset, "out of memory");
    uint32_t e = arr + 1;
    for (uint32_t i = 0; i < m->n_operations; i++, e = chk_node(c, e)->next)
        if (!operation(c, e, i, m->n_operands, m->version, &m->operations[i])) return false;
    return true;
}

static bool ios(checker *c, const char *key, uint32_t n_operands, uint32_t *count, mdla_io **out) {
    uint32_t arr = mp_get(c->doc, 0, key);
    *count = chk_node(c, arr)->count;
    *out = calloc(*count ? *count : 1, sizeof **out);
    if (!*out) return chk_fail(c, "BadHeader", key, chk_node(c, arr)->offset, "out of memory");
    uint32_t e = arr + 1;
    char f[MDLA_FIELD_MAX];
    for (uint32_t i = 0; i < *count; i++, e = chk_node(c, e)->next) {
        mdla_fmt(f, sizeof f, "%s[%u]", key, i);
        if (!io(c, e, f, n_operands, &(*out)[i])) return false;
    }
    return true;
}

static const char *const PARTITION_KEYS[] = {"device", "operations", "inputs", "outputs", NULL};

/* The uint list `key` of partition map `e` (field f), each entry below n. */
static bool bounded_list(checker *c, uint32_t e, const char *f, const char *key, uint32_t n,
                         const char *what, uint32_t *count, uint32_t **out) {
    char g[MDLA_FIELD_MAX + 16], h[MDLA_FIELD_MAX + 32], why[MDLA_WHY_MAX];
    uint32_t arr = mp_get(c->doc, e, key);
    mdla_fmt(g, sizeof g, "%s.%s", f, key);
    if (!chk_uint_list(c, arr, g, UINT32_MAX)) return false;
    *count = chk_node(c, arr)->count;
    *out = calloc(*count ? *count : 1, sizeof(uint32_t));
    if (!*out) return chk_fail(c, "BadHeader", g, chk_node(c, arr)->offset, "out of memory");
    uint32_t v = arr + 1;
    for (uint32_t k = 0; k < *count; k++, v = chk_node(c, v)->next) {
        if (chk_node(c, v)->v.u >= n) {
            mdla_fmt(h, sizeof h, "%s[%u]", g, k);
            mdla_fmt(why, sizeof why, "%s %llu of %u", what, (unsigned long long)chk_node(c, v)->v.u, n);
            return chk_fail(c, "BadIndex", h, chk_node(c, v)->offset, why);
        }
        (*out)[k] = (uint32_t)chk_node(c, v)->v.u;
    }
    return true;
}

/* A format-2 file: one partition of every operation on model.quant.device (else mtk-mdla). */
static bool one_partition(checker *c, mdla_manifest *m) {
    mdla_partition *p = m->partitions;
    uint32_t quant = mp_get(c->doc, mp_get(c->doc, 0, "model"), "quant");
    p->device = quant && mp_get(c->doc, quant, "device") ? chk_str_of(c, quant, "device")
                                                          : (mdla_str){"mtk-mdla", 8};
    p->n_operations = m->n_operations;
    p->n_inputs = m->n_inputs;
    p->n_outputs = m->n_outputs;
    p->operations = calloc(m->n_operations ? m->n_operations : 1, sizeof(uint32_t));
    p->inputs = calloc(m->n_inputs ? m->n_inputs : 1, sizeof(uint32_t));
    p->outputs = calloc(m->n_outputs ? m->n_outputs : 1, sizeof(uint32_t));
    if (!p->operations || !p->inputs || !p->outputs)
        return chk_fail(c, "BadHeader", "operations", 0, "out of memory");
    for (uint32_t i = 0; i < m->n_operations; i++) p->operations[i] = i;
    for (uint32_t i = 0; i < m->n_inputs; i++) p->inputs[i] = m->inputs[i].operand;
    for (uint32_t i = 0; i < m->n_outputs; i++) p->outputs[i] = m->outputs[i].operand;
    return true;
}

static bool partitions(checker *c, mdla_manifest *m) {
    uint32_t arr = m->version >= 3 ? mp_get(c->doc, 0, "partitions") : 0;
    m->n_partitions = arr ? chk_node(c, arr)->count : 1;
    m->partitions = calloc(m->n_partitions ? m->n_partitions : 1, sizeof *m->partitions);
    if (!m->partitions) return chk_fail(c, "BadHeader", "partitions", 0, "out of memory");
    if (!arr) return one_partition(c, m);
    char f[MDLA_FIELD_MAX];
    uint32_t e = arr + 1;
    for (uint32_t i = 0; i < m->n_partitions; i++, e = chk_node(c, e)->next) {
        mdla_partition *p = &m->partitions[i];
        mdla_fmt(f, sizeof f, "partitions[%u]", i);
        if (!chk_keys(c, e, f, PARTITION_KEYS, PARTITION_KEYS) ||
            !chk_typed(c, e, "device", f, "str") ||
            !bounded_list(c, e, f, "operations", m->n_operations, "operation", &p->n_operations,
                          &p->operations) ||
            !bounded_list(c, e, f, "inputs", m->n_operands, "operand", &p->n_inputs, &p->inputs) ||
            !bounded_list(c, e, f, "outputs", m->n_operands, "operand", &p->n_outputs, &p->outputs))
            return false;
        p->device = chk_str_of(c, e, "device");
    }
    return true;
}

const mdla_budget MDLA_DEFAULT_BUDGET = {MDLA_DEFAULT_MAX_TENSOR_BYTES, MDLA_DEFAULT_MAX_TOTAL_BYTES,
                                        MP_DEFAULT_MAX_NODES, MDLA_DEFAULT_MAX_OP_OPS,
                                        MDLA_DEFAULT_MAX_TOTAL_OPS};

bool mdla_manifest_parse(const uint8_t *buf, size_t size, mdla_manifest *m, mdla_error *err) {
    return mdla_manifest_parse_budget(buf, size, &MDLA_DEFAULT_BUDGET, m, err);
}

bool mdla_manifest_parse_budget(const uint8_t *buf, size_t size, const mdla_budget *budget,
                                mdla_manifest *m, mdla_error *err) {
    memset(m, 0, sizeof *m);
    memset(err, 0, sizeof *err);
    if (!preamble(buf, size, m, err)) return false;
    mp_doc doc;
    if (!mp_decode_limited(buf, MDLA_PREAMBLE, MDLA_PREAMBLE + m->header_length,
                           budget->max_header_values, &doc, err)) {
        mp_free(&doc);
        return false;
    }
    bool ok = true;
    if (m->data_start > size) {
        mdla_fail(err, "TruncatedData", "data", size, "data section starts at %llu",
                  (unsigned long long)m->data_start);
        ok = false;
    }
    for (uint64_t k = MDLA_PREAMBLE + m->header_length; ok && k < m->data_start; k++) {
        if (buf[k]) {
            mdla_fail(err, "BadPadding", "padding", k, "padding before the data section must be zero");
            ok = false;
        }
    }
    checker c = {&doc, err, ""};
    ok = ok && sections(&c, size, m) && operands(&c, buf, m) && operations(&c, m) &&
         ios(&c, "inputs", m->n_operands, &m->n_inputs, &m->inputs) &&
         ios(&c, "outputs", m->n_operands, &m->n_outputs, &m->outputs) && partitions(&c, m) &&
         chk_semantics(&c, m, budget) && chk_finite(&c, m);
    mp_free(&doc);
    if (!ok) mdla_manifest_free(m);
    return ok;
}

void mdla_manifest_free(mdla_manifest *m) {
    for (uint32_t i = 0; m->operands && i < m->n_operands; i++) free(m->operands[i].scales);
    for (uint32_t i = 0; m->operations && i < m->n_operations; i++) {
        free(m->operations[i].inputs);
        free(m->operations[i].outputs);
    }
    for (uint32_t i = 0; m->partitions && i < m->n_partitions; i++) {
        free(m->partitions[i].operations);
        free(m->partitions[i].inputs);
        free(m->partitions[i].outputs);
    }
    free(m->partitions);
    free(m->operands);
    free(m->operations);
    free(m->inputs);
    free(m->outputs);
    memset(m, 0, sizeof *m);
}
