/*
 * manifest_verdicts.c: the C reader's verdict on many files in one process, for the
 * differential test against the Python reader (tests/runtime/test_fuzz.py).
 *
 *   manifest_verdicts < LIST      one file name a line in; one line out per file:
 *       ok                         the file parses
 *       err KIND OFFSET FIELD      it does not (FIELD last: it may hold spaces)
 *   manifest_verdicts N < LIST    the same with the budget's per-operation work limit N
 *                                  (multiply-adds or compares; tests/runtime/test_compute.py)
 *
 * Built with the engine's reader sources (mdla_runtime.build.ENGINE_SOURCES, less the engine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 65536;
    uint8_t *buf = malloc(cap);
    *len = 0;
    size_t got;
    while (buf != NULL && (got = fread(buf + *len, 1, cap - *len, f)) > 0) {
        *len += got;
        if (*len == cap) {
            uint8_t *grown = realloc(buf, cap *= 2);
            if (grown == NULL) free(buf);
            buf = grown;
        }
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    mdla_budget budget = MDLA_DEFAULT_BUDGET;
    if (argc > 1) budget.max_op_ops = strtoull(argv[1], NULL, 10);
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        size_t len = 0;
        uint8_t *buf = read_all(line, &len);
        if (buf == NULL) {
            fprintf(stderr, "manifest_verdicts: cannot read %s\n", line);
            return 2;
        }
        /* an exactly-sized copy, as the engine reads a file of exactly this length */
        uint8_t *exact = malloc(len ? len : 1);
        if (exact == NULL) return 2;
        memcpy(exact, buf, len);
        free(buf);
        mdla_manifest m;
        mdla_error err;
        if (mdla_manifest_parse_budget(exact, len, &budget, &m, &err)) {
            puts("ok");
            mdla_manifest_free(&m);
        } else {
            for (char *c = err.field; *c; c++)
                if (*c == '\n' || *c == '\r') *c = ' ';
            printf("err %s %llu %s\n", err.kind, (unsigned long long)err.offset, err.field);
        }
        free(exact);
        fflush(stdout);
    }
    return 0;
}
