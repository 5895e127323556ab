#ifndef TUNEUP_CSOXR_H
#define TUNEUP_CSOXR_H

/* libsoxr (Debian: libsoxr-dev for this header; libsoxr0 at run time), loaded with dlopen on first use rather than
 * linked, so that only the commands that resample map it (and its OpenMP runtime) (issue 17 §5). The soxr_*
 * functions below that Tuneup calls are defined in soxr.c: each loads the library once and calls its function.
 * Callers that can report an error first call tuneup_soxr_load (AudioInput does): when the library is missing, a
 * stub prints that line and exits with 74. */
#include <soxr.h>

/* NULL once libsoxr is loaded (for good), else one line saying why it cannot be (the same line every call). */
const char *tuneup_soxr_load(void);

#endif
