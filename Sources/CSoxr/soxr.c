/* The soxr_* functions Tuneup calls, each forwarding to libsoxr opened with dlopen on first use (CSoxr.h). */
#include "CSoxr.h"

#include "CLazyLibrary.h"

static struct {
    soxr_t (*soxr_create)(double, double, unsigned, soxr_error_t *, soxr_io_spec_t const *, soxr_quality_spec_t const *,
                          soxr_runtime_spec_t const *);
    soxr_error_t (*soxr_process)(soxr_t, soxr_in_t, size_t, size_t *, soxr_out_t, size_t, size_t *);
    void (*soxr_delete)(soxr_t);
    soxr_io_spec_t (*soxr_io_spec)(soxr_datatype_t, soxr_datatype_t);
    soxr_quality_spec_t (*soxr_quality_spec)(unsigned long, unsigned long);
    soxr_runtime_spec_t (*soxr_runtime_spec)(unsigned);
} api;
static const char *const symbols[] = {"soxr_create", "soxr_process", "soxr_delete", "soxr_io_spec", "soxr_quality_spec", "soxr_runtime_spec"};
_Static_assert(sizeof api == sizeof symbols / sizeof *symbols * sizeof(void *), "one symbol per function pointer, in order");
static tuneup_lazy_library library = {
    .file = "libsoxr.so.0", .package = "libsoxr0", .purpose = "audio resampling needs libsoxr",
    .symbols = symbols, .slots = (void **)&api, .count = sizeof symbols / sizeof *symbols,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

const char *tuneup_soxr_load(void) { return tuneup_lazy_load(&library); }

/* A stub called without tuneup_soxr_load's check, with the library missing: the one line, exit 74. */
static void require(void) { tuneup_lazy_require(&library); }

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
