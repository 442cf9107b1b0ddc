/* report.c: JSON string escaping for the engine's --json output. */
#include "report.h"

#include <string.h>

void json_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c < 0x20 || c == 0x7F) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void json_cstr(FILE *f, const char *s) { json_str(f, s ? s : "", s ? strlen(s) : 0); }
