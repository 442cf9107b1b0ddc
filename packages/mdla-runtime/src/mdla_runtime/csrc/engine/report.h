/*
 * report.h: the engine's output, as text for people or as one JSON object (--json) for
 * mdla_runtime.target. Strings are escaped; names from the manifest are not NUL-terminated.
 */
#ifndef MDLA_REPORT_H
#define MDLA_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void json_str(FILE *f, const char *s, size_t n);
void json_cstr(FILE *f, const char *s);

/* Engine exit codes (docs/STYLE.md): 1 bad input, 2 usage, 3 unsupported, 4 device/adapter. */
enum { EXIT_BAD_INPUT = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3, EXIT_DEVICE = 4 };

#endif /* MDLA_REPORT_H */
