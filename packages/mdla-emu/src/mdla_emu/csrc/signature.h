/*
 * signature.h: do an operation's operand types fit one of its forms? The forms come from the
 * generated mdla_ops.h (mdla_ir/schema.py), so the engine's manifest reader and the emulator's
 * addOperation read the same table. The twin of mdla_ir.schema.match; tests/runtime/
 * test_signature.py checks that both agree.
 *
 *   form     letters (a w t i f B *, see mdla_ops.h: mdla_sig_type_ok), x+ = one or more x,
 *            [...] = an optional part (nestable): "awtiiiiiii[B[ii]]", "a+i", "af[i]"
 *   type_of  the type of operand i (ctx is passed through), or NULL to match counts only
 */
#ifndef MDLA_SIGNATURE_H
#define MDLA_SIGNATURE_H

#include "mdla_ops.h"

typedef int32_t (*mdla_type_fn)(const void *ctx, uint32_t i);

static inline bool mdla_sig_letter(char c, mdla_type_fn type_of, const void *ctx, uint32_t i) {
    return type_of == NULL || mdla_sig_type_ok(c, type_of(ctx, i));
}

/* Just past the `]` closing the `[` at p. */
static inline const char *mdla_sig_group_end(const char *p) {
    int depth = 0;
    for (; *p; p++) {
        if (*p == '[') depth++;
        else if (*p == ']' && --depth == 0) return p + 1;
    }
    return p;
}

/* Operands i..n-1 fit the form from p on (backtracking over optional parts and repeats). */
static inline bool mdla_sig_at(const char *p, uint32_t i, uint32_t n, mdla_type_fn type_of,
                               const void *ctx) {
    for (;;) {
        const char c = *p;
        if (c == '\0') return i == n;
        if (c == ']') {
            p++;
            continue;
        }
        if (c == '[')
            return mdla_sig_at(p + 1, i, n, type_of, ctx) ||
                   mdla_sig_at(mdla_sig_group_end(p), i, n, type_of, ctx);
        if (p[1] == '+') {
            uint32_t j = i;
            while (j < n && mdla_sig_letter(c, type_of, ctx, j)) j++;
            for (; j > i; j--)
                if (mdla_sig_at(p + 2, j, n, type_of, ctx)) return true;
            return false;
        }
        if (i >= n || !mdla_sig_letter(c, type_of, ctx, i)) return false;
        p++;
        i++;
    }
}

static inline bool mdla_sig_match(const char *form, uint32_t n, mdla_type_fn type_of,
                                  const void *ctx) {
    return mdla_sig_at(form, 0, n, type_of, ctx);
}

/* The index of the first form of `sig` the inputs fit, or -1. */
static inline int mdla_sig_find(const mdla_op_signature *sig, uint32_t n, mdla_type_fn type_of,
                                const void *ctx) {
    for (int k = 0; k < MDLA_MAX_FORMS && sig->forms[k] != NULL; k++)
        if (mdla_sig_match(sig->forms[k], n, type_of, ctx)) return k;
    return -1;
}

/* Whether operation `code` may take these inputs and outputs; codes without forms take any. */
static inline bool mdla_sig_ok(int32_t code, uint32_t n_in, mdla_type_fn in_type,
                               const void *in_ctx, uint32_t n_out, mdla_type_fn out_type,
                               const void *out_ctx) {
    const mdla_op_signature *sig = mdla_op_signature_of(code);
    if (sig == NULL) return true;
    return mdla_sig_find(sig, n_in, in_type, in_ctx) >= 0 &&
           mdla_sig_match(sig->outputs, n_out, out_type, out_ctx);
}

#endif /* MDLA_SIGNATURE_H */
