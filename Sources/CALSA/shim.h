// alsa-lib (Debian: libasound2-dev), found with pkg-config "alsa": the speaker receiver's sound card output.
#include <alsa/asoundlib.h>

// alsa-lib prints its own diagnostics to stderr ("ALSA lib pcm.c:...: Unknown PCM x"); the receiver reports every
// failure itself, in one line. The handler is variadic, which Swift cannot define, so it lives here.
static inline void tuneup_alsa_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void tuneup_alsa_quiet(void) { snd_lib_error_set_handler(tuneup_alsa_silent); }
