#ifndef TUNEUP_CSNDFILE_H
#define TUNEUP_CSNDFILE_H

/* libsndfile (Debian: libsndfile1-dev for this header; libsndfile1 at run time), loaded with dlopen on first use
 * rather than linked: it brings eight codec libraries (FLAC, Vorbis, Opus, MP3...) that every other command would
 * otherwise map at start-up (issue 17 §5). The sf_* functions below that Tuneup calls are defined in sndfile.c: each
 * loads the library once and calls its function. Callers that can report an error first call tuneup_sndfile_load
 * (AudioInput does): when the library is missing, a stub prints that line and exits with 74. */
#include <sndfile.h>

/* NULL once libsndfile is loaded (for good), else one line saying why it cannot be (the same line every call). */
const char *tuneup_sndfile_load(void);

#endif
