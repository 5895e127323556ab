// alsa-lib (Debian: libasound2-dev for these headers; libasound2 at run time): the speaker receiver's sound card
// output, loaded with dlopen on first use rather than linked, so that only `speaker receive` to a sound card maps it
// (docs/packaging.md). The snd_* functions Tuneup calls are defined in alsa.c: each loads the library once and calls
// its function. The receiver calls tuneup_alsa_load first: when the library is missing, it reports that line.
#ifndef TUNEUP_CALSA_H
#define TUNEUP_CALSA_H
#include <alsa/asoundlib.h>

// alsa-lib prints its own diagnostics to stderr ("ALSA lib pcm.c:...: Unknown PCM x"); the receiver reports every
// failure itself, in one line. The handler is variadic, which Swift cannot define, so it lives here.
static inline void tuneup_alsa_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void tuneup_alsa_quiet(void) { snd_lib_error_set_handler(tuneup_alsa_silent); }

/* NULL once alsa-lib is loaded (for good), else one line saying why it cannot be (the same line every call). */
const char *tuneup_alsa_load(void);

#endif
