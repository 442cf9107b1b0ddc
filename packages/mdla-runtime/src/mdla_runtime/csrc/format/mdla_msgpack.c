/* mdla_msgpack.c: the strict msgpack reader declared in mdla_msgpack.h. */
#include "mdla_msgpack.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MP_MAX_DEPTH 32

void mdla_fail(mdla_error *err, const char *kind, const char *field, uint64_t offset,
               const char *fmt, ...) {
    va_list ap;
    err->kind = kind;
    mdla_fmt(err->field, sizeof err->field, "%s", field);
    err->offset = offset;
    va_start(ap, fmt);
    vsnprintf(err->why, sizeof err->why, fmt, ap);
    va_end(ap);
}

void mdla_fmt(char *out, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

void mdla_escape_key(char *out, size_t size, const char *s, uint32_t n) {
    size_t w = 0;
    for (uint32_t i = 0; i < n && size > 0; i++) {
        unsigned char ch = (unsigned char)s[i];
        char buf[8];
        if (ch == '\\' || ch == '.' || ch == '[' || ch == ']' || ch == '<') mdla_fmt(buf, sizeof buf, "\\%c", ch);
        else if (ch == '\n') mdla_fmt(buf, sizeof buf, "\\n");
        else if (ch == '\t') mdla_fmt(buf, sizeof buf, "\\t");
        else if (ch == '\r') mdla_fmt(buf, sizeof buf, "\\r");
        else if (ch < 0x20 || ch == 0x7F) mdla_fmt(buf, sizeof buf, "\\x%02x", ch);
        else { buf[0] = (char)ch; buf[1] = '\0'; }
        size_t len = strlen(buf);
        if (w + len >= size) break;
        memcpy(out + w, buf, len);
        w += len;
    }
    if (size > 0) out[w] = '\0';
}

typedef struct {
    const uint8_t *buf;
    uint64_t pos, end;
    mp_doc *doc;
    mdla_error *err;
    uint32_t max_nodes;
    char path[MDLA_FIELD_MAX];
} mp_reader;

static bool take(mp_reader *r, uint64_t n, const char **out) {
    if (n > r->end - r->pos) {
        mdla_fail(r->err, "BadHeader", r->path, r->pos,
                  "msgpack value needs %llu bytes, header ends first", (unsigned long long)n);
        return false;
    }
    *out = (const char *)r->buf + r->pos;
    r->pos += n;
    return true;
}

static bool read_be(mp_reader *r, unsigned n, uint64_t *out) {
    const char *p;
    if (!take(r, n, &p)) return false;
    uint64_t v = 0;
    for (unsigned k = 0; k < n; k++) v = (v << 8) | (uint8_t)p[k];
    *out = v;
    return true;
}

/* Well-formed UTF-8 (Unicode Table 3-7): no overlongs, no surrogates, at most U+10FFFF. */
static bool utf8_ok(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        unsigned len;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return false;
        if (n - i < len) return false;
        if (s[i + 1] < lo || s[i + 1] > hi) return false;
        for (unsigned k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
        i += len;
    }
    return true;
}

static uint32_t new_node(mp_reader *r, uint8_t kind, uint64_t offset) {
    mp_doc *d = r->doc;
    if (d->count == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        mp_node *nodes = realloc(d->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return UINT32_MAX;
        d->nodes = nodes;
        d->cap = cap;
    }
    mp_node *n = &d->nodes[d->count];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->offset = offset;
    n->next = d->count + 1;
    return d->count++;
}

static bool decode(mp_reader *r, int depth);

static size_t path_push(mp_reader *r, const char *fmt, const char *s, uint32_t n, uint64_t idx) {
    size_t len = strlen(r->path);
    char key[MDLA_FIELD_MAX];
    if (fmt[0] == '[') {
        mdla_fmt(r->path + len, sizeof r->path - len, "[%llu]", (unsigned long long)idx);
        return len;
    }
    mdla_escape_key(key, sizeof key, s, n);
    if (strcmp(r->path, "header") == 0) mdla_fmt(r->path, sizeof r->path, "%s", key);
    else mdla_fmt(r->path + len, sizeof r->path - len, ".%s", key);
    return len;
}

static bool decode_array(mp_reader *r, uint32_t self, uint64_t n, int depth) {
    if (n > r->end - r->pos) {
        mdla_fail(r->err, "BadHeader", r->path, r->pos,
                  "array of %llu elements is longer than the header", (unsigned long long)n);
        return false;
    }
    r->doc->nodes[self].count = (uint32_t)n;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = path_push(r, "[", NULL, 0, i);
        if (!decode(r, depth + 1)) return false;
        r->path[len] = '\0';
    }
    return true;
}

static bool decode_map(mp_reader *r, uint32_t self, uint64_t n, int depth) {
    if (2 * n > r->end - r->pos) {
        mdla_fail(r->err, "BadHeader", r->path, r->pos,
                  "map of %llu entries is longer than the header", (unsigned long long)n);
        return false;
    }
    r->doc->nodes[self].count = (uint32_t)n;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t key_at = r->pos;
        size_t len = strlen(r->path);
        mdla_fmt(r->path + len, sizeof r->path - len, ".<key>");
        uint32_t key = r->doc->count;
        if (!decode(r, depth + 1)) return false;
        r->path[len] = '\0';
        mp_node *k = &r->doc->nodes[key];
        if (k->kind != MP_STR) {
            mdla_fail(r->err, "BadHeader", r->path, key_at, "map key is not a string");
            return false;
        }
        const char *ks = k->v.s;
        uint32_t kn = k->count;
        for (uint32_t c = self + 1; c < key; c = r->doc->nodes[r->doc->nodes[c].next].next) {
            const mp_node *o = &r->doc->nodes[c];
            if (o->count == kn && memcmp(o->v.s, ks, kn) == 0) {
                char esc[MDLA_FIELD_MAX];
                mdla_escape_key(esc, sizeof esc, ks, kn);
                mdla_fmt(r->path + len, sizeof r->path - len, ".%s", esc);
                mdla_fail(r->err, "BadHeader", r->path, key_at, "duplicate map key");
                return false;
            }
        }
        /* at the top level the key replaces "header" (fields read `operands`) */
        char saved[MDLA_FIELD_MAX];
        memcpy(saved, r->path, sizeof saved);
        path_push(r, ".", ks, kn, 0);
        if (!decode(r, depth + 1)) return false;
        memcpy(r->path, saved, sizeof saved);
    }
    return true;
}

static bool decode(mp_reader *r, int depth) {
    if (depth > MP_MAX_DEPTH) {
        mdla_fail(r->err, "BadHeader", r->path, r->pos, "nesting deeper than %d", MP_MAX_DEPTH);
        return false;
    }
    if (r->doc->count >= r->max_nodes) {
        mdla_fail(r->err, "OverBudget", r->path, r->pos,
                  "more than %u header values (raise the limit with --max-header-values)", r->max_nodes);
        return false;
    }
    uint64_t start = r->pos;
    const char *p;
    if (!take(r, 1, &p)) return false;
    uint8_t b = (uint8_t)p[0];
    uint32_t self = new_node(r, MP_NIL, start);
    if (self == UINT32_MAX) {
        mdla_fail(r->err, "BadHeader", r->path, start, "out of memory");
        return false;
    }
    mp_node *n = &r->doc->nodes[self];
    uint64_t len = 0, u = 0;
    bool ok = true;
    if (b <= 0x7F) { n->kind = MP_UINT; n->v.u = b; }
    else if (b >= 0xE0) { n->kind = MP_NINT; n->v.i = (int64_t)b - 0x100; }
    else if (b >= 0x80 && b <= 0x8F) { n->kind = MP_MAP; ok = decode_map(r, self, b & 0x0F, depth); }
    else if (b >= 0x90 && b <= 0x9F) { n->kind = MP_ARRAY; ok = decode_array(r, self, b & 0x0F, depth); }
    else if (b >= 0xA0 && b <= 0xBF) { n->kind = MP_STR; len = b & 0x1F; goto str; }
    else switch (b) {
    case 0xC0: n->kind = MP_NIL; break;
    case 0xC2: case 0xC3: n->kind = MP_BOOL; n->v.b = b == 0xC3; break;
    case 0xCC: case 0xCD: case 0xCE: case 0xCF:
        if (!read_be(r, 1u << (b - 0xCC), &u)) return false;
        n = &r->doc->nodes[self];
        n->kind = MP_UINT; n->v.u = u; break;
    case 0xD0: case 0xD1: case 0xD2: case 0xD3: {
        unsigned w = 1u << (b - 0xD0);
        if (!read_be(r, w, &u)) return false;
        int64_t v = w == 8 ? (int64_t)u : (int64_t)(u ^ (1ull << (8 * w - 1))) - (int64_t)(1ull << (8 * w - 1));
        n = &r->doc->nodes[self];
        if (v < 0) { n->kind = MP_NINT; n->v.i = v; } else { n->kind = MP_UINT; n->v.u = (uint64_t)v; }
        break;
    }
    case 0xCA: {
        if (!read_be(r, 4, &u)) return false;
        uint32_t bits = (uint32_t)u;
        float f;
        memcpy(&f, &bits, 4);
        n = &r->doc->nodes[self];
        n->kind = MP_FLOAT; n->v.f = f; break;
    }
    case 0xCB: {
        if (!read_be(r, 8, &u)) return false;
        double d;
        memcpy(&d, &u, 8);
        n = &r->doc->nodes[self];
        n->kind = MP_FLOAT; n->v.f = d; break;
    }
    case 0xD9: case 0xDA: case 0xDB:
        if (!read_be(r, 1u << (b - 0xD9), &len)) return false;
        n = &r->doc->nodes[self];
        n->kind = MP_STR;
        goto str;
    case 0xDC: case 0xDD:
        if (!read_be(r, b == 0xDC ? 2 : 4, &len)) return false;
        r->doc->nodes[self].kind = MP_ARRAY;
        ok = decode_array(r, self, len, depth);
        break;
    case 0xDE: case 0xDF:
        if (!read_be(r, b == 0xDE ? 2 : 4, &len)) return false;
        r->doc->nodes[self].kind = MP_MAP;
        ok = decode_map(r, self, len, depth);
        break;
    default:
        mdla_fail(r->err, "BadHeader", r->path, start,
                  "msgpack type byte 0x%02x is not allowed in a header", b);
        return false;
    }
    if (!ok) return false;
    r->doc->nodes[self].next = r->doc->count;
    return true;
str : {
    uint64_t at = r->pos;
    if (!take(r, len, &p)) return false;
    if (!utf8_ok((const uint8_t *)p, len)) {
        mdla_fail(r->err, "BadHeader", r->path, at, "string is not valid UTF-8");
        return false;
    }
    n = &r->doc->nodes[self];
    n->v.s = p;
    n->count = (uint32_t)len;
    n->next = r->doc->count;
    return true;
}
}

bool mp_decode(const uint8_t *buf, uint64_t start, uint64_t end, mp_doc *doc, mdla_error *err) {
    return mp_decode_limited(buf, start, end, MP_DEFAULT_MAX_NODES, doc, err);
}

bool mp_decode_limited(const uint8_t *buf, uint64_t start, uint64_t end, uint32_t max_nodes,
                       mp_doc *doc, mdla_error *err) {
    mp_reader r = {buf, start, end, doc, err, max_nodes, "header"};
    memset(doc, 0, sizeof *doc);
    if (!decode(&r, 0)) return false;
    if (r.pos != end) {
        mdla_fail(err, "BadHeader", "header", r.pos, "%llu bytes after the header's msgpack map",
                  (unsigned long long)(end - r.pos));
        return false;
    }
    if (doc->nodes[0].kind != MP_MAP) {
        mdla_fail(err, "BadHeader", "header", start, "header is not a msgpack map");
        return false;
    }
    return true;
}

void mp_free(mp_doc *doc) {
    free(doc->nodes);
    memset(doc, 0, sizeof *doc);
}

bool mp_key_is(const mp_node *key, const char *s) {
    size_t n = strlen(s);
    return key->kind == MP_STR && key->count == n && memcmp(key->v.s, s, n) == 0;
}

uint32_t mp_get(const mp_doc *doc, uint32_t map, const char *key) {
    const mp_node *m = &doc->nodes[map];
    if (m->kind != MP_MAP) return 0;
    uint32_t c = map + 1;
    for (uint32_t i = 0; i < m->count; i++) {
        uint32_t v = doc->nodes[c].next;
        if (mp_key_is(&doc->nodes[c], key)) return v;
        c = doc->nodes[v].next;
    }
    return 0;
}
