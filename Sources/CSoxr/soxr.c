/* The soxr_* functions Tuneup calls, each forwarding to libsoxr opened with dlopen on first use (CSoxr.h). */
#define _GNU_SOURCE
#include "CSoxr.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define LIBRARY "libsoxr.so.0"
#define PACKAGE "libsoxr0"

static struct {
    soxr_t (*soxr_create)(double, double, unsigned, soxr_error_t *, soxr_io_spec_t const *, soxr_quality_spec_t const *,
                          soxr_runtime_spec_t const *);
    soxr_error_t (*soxr_process)(soxr_t, soxr_in_t, size_t, size_t *, soxr_out_t, size_t, size_t *);
    void (*soxr_delete)(soxr_t);
    soxr_io_spec_t (*soxr_io_spec)(soxr_datatype_t, soxr_datatype_t);
    soxr_quality_spec_t (*soxr_quality_spec)(unsigned long, unsigned long);
    soxr_runtime_spec_t (*soxr_runtime_spec)(unsigned);
} api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];
static int loaded;

static void load(void) {
    void *library = dlopen(LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(failure, sizeof failure, "audio resampling needs libsoxr (Debian package " PACKAGE "): %s", dlerror());
        return;
    }
#define BIND(name)                                                                                              \
    if (!(*(void **)&api.name = dlsym(library, #name))) {                                                       \
        snprintf(failure, sizeof failure, "the installed " LIBRARY " has no " #name " (Debian package " PACKAGE ")"); \
        return;                                                                                                 \
    }
    BIND(soxr_create) BIND(soxr_process) BIND(soxr_delete) BIND(soxr_io_spec) BIND(soxr_quality_spec) BIND(soxr_runtime_spec)
#undef BIND
    loaded = 1;
}

const char *tuneup_soxr_load(void) {
    pthread_once(&once, load);
    return loaded ? NULL : failure;
}

/* A stub called without tuneup_soxr_load's check, with the library missing: the one line, exit 74 (as AudioInput's library-missing). */
static void require(void) {
    const char *why = tuneup_soxr_load();
    if (why) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, why);
        exit(74);
    }
}

/* Hidden: libsoxr's own calls to its exported functions, and other libraries', never land here. */
#define STUB __attribute__((visibility("hidden")))
STUB soxr_t soxr_create(double input_rate, double output_rate, unsigned channels, soxr_error_t *error,
                        soxr_io_spec_t const *io, soxr_quality_spec_t const *quality, soxr_runtime_spec_t const *runtime) {
    require();
    return api.soxr_create(input_rate, output_rate, channels, error, io, quality, runtime);
}
STUB soxr_error_t soxr_process(soxr_t resampler, soxr_in_t in, size_t in_length, size_t *in_done, soxr_out_t out,
                               size_t out_length, size_t *out_done) {
    require();
    return api.soxr_process(resampler, in, in_length, in_done, out, out_length, out_done);
}
STUB void soxr_delete(soxr_t resampler) { require(); api.soxr_delete(resampler); }
STUB soxr_io_spec_t soxr_io_spec(soxr_datatype_t input, soxr_datatype_t output) { require(); return api.soxr_io_spec(input, output); }
STUB soxr_quality_spec_t soxr_quality_spec(unsigned long recipe, unsigned long flags) { require(); return api.soxr_quality_spec(recipe, flags); }
STUB soxr_runtime_spec_t soxr_runtime_spec(unsigned threads) { require(); return api.soxr_runtime_spec(threads); }
