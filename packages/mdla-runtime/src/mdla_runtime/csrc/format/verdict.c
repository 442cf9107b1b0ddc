/*
 * verdict.c: the reader's verdict on bytes in memory, for Python's ctypes
 * (mdla_runtime/format/c_reader.py: a compile checks the file it is about to write).
 *
 * True when buf[0, size) is a valid .mdla file within `budget`; else false, with `err` naming
 * the kind, field and offset as the Python reader's ManifestError would. Nothing is kept.
 */
#include "manifest.h"

bool mdla_manifest_verdict(const uint8_t *buf, size_t size, const mdla_budget *budget,
                           mdla_error *err) {
    mdla_manifest m;
    if (!mdla_manifest_parse_budget(buf, size, budget, &m, err)) return false;
    mdla_manifest_free(&m);
    return true;
}
