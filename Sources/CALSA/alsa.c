/* The snd_* functions Tuneup calls, each forwarding to alsa-lib opened with dlopen on first use (CALSA.h). */
#include "CALSA.h"

#include "CLazyLibrary.h"

static struct {
    int (*snd_lib_error_set_handler)(snd_lib_error_handler_t handler);
    int (*snd_pcm_close)(snd_pcm_t *pcm);
    int (*snd_pcm_delay)(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp);
    int (*snd_pcm_drain)(snd_pcm_t *pcm);
    int (*snd_pcm_drop)(snd_pcm_t *pcm);
    int (*snd_pcm_get_params)(snd_pcm_t *pcm, snd_pcm_uframes_t *buffer_size, snd_pcm_uframes_t *period_size);
    int (*snd_pcm_open)(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode);
    int (*snd_pcm_recover)(snd_pcm_t *pcm, int err, int silent);
    int (*snd_pcm_set_params)(snd_pcm_t *pcm, snd_pcm_format_t format, snd_pcm_access_t access, unsigned int channels, unsigned int rate, int soft_resample, unsigned int latency);
    snd_pcm_state_t (*snd_pcm_state)(snd_pcm_t *pcm);
    int (*snd_pcm_sw_params)(snd_pcm_t *pcm, snd_pcm_sw_params_t *params);
    int (*snd_pcm_sw_params_current)(snd_pcm_t *pcm, snd_pcm_sw_params_t *params);
    void (*snd_pcm_sw_params_free)(snd_pcm_sw_params_t *obj);
    int (*snd_pcm_sw_params_malloc)(snd_pcm_sw_params_t **ptr);
    int (*snd_pcm_sw_params_set_start_threshold)(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val);
    snd_pcm_sframes_t (*snd_pcm_writei)(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size);
    const char * (*snd_strerror)(int errnum);
} api;
static const char *const symbols[] = {"snd_lib_error_set_handler", "snd_pcm_close", "snd_pcm_delay", "snd_pcm_drain", "snd_pcm_drop", "snd_pcm_get_params", "snd_pcm_open", "snd_pcm_recover", "snd_pcm_set_params", "snd_pcm_state", "snd_pcm_sw_params", "snd_pcm_sw_params_current", "snd_pcm_sw_params_free", "snd_pcm_sw_params_malloc", "snd_pcm_sw_params_set_start_threshold", "snd_pcm_writei", "snd_strerror"};
_Static_assert(sizeof api == sizeof symbols / sizeof *symbols * sizeof(void *), "one symbol per function pointer, in order");
static tuneup_lazy_library library = {
    .file = "libasound.so.2", .package = "libasound2", .purpose = "playing to a sound card needs alsa-lib",
    .symbols = symbols, .slots = (void **)&api, .count = sizeof symbols / sizeof *symbols,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

const char *tuneup_alsa_load(void) { return tuneup_lazy_load(&library); }

/* A stub called without tuneup_alsa_load's check, with the library missing: the one line, exit 74. */
static void require(void) { tuneup_lazy_require(&library); }

/* Hidden: the library's own calls to its exported functions, and other libraries', never land here. */
#define STUB __attribute__((visibility("hidden")))
STUB int snd_lib_error_set_handler(snd_lib_error_handler_t handler) { require(); return api.snd_lib_error_set_handler(handler); }
STUB int snd_pcm_close(snd_pcm_t *pcm) { require(); return api.snd_pcm_close(pcm); }
STUB int snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp) { require(); return api.snd_pcm_delay(pcm, delayp); }
STUB int snd_pcm_drain(snd_pcm_t *pcm) { require(); return api.snd_pcm_drain(pcm); }
STUB int snd_pcm_drop(snd_pcm_t *pcm) { require(); return api.snd_pcm_drop(pcm); }
STUB int snd_pcm_get_params(snd_pcm_t *pcm, snd_pcm_uframes_t *buffer_size, snd_pcm_uframes_t *period_size) { require(); return api.snd_pcm_get_params(pcm, buffer_size, period_size); }
STUB int snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode) { require(); return api.snd_pcm_open(pcm, name, stream, mode); }
STUB int snd_pcm_recover(snd_pcm_t *pcm, int err, int silent) { require(); return api.snd_pcm_recover(pcm, err, silent); }
STUB int snd_pcm_set_params(snd_pcm_t *pcm, snd_pcm_format_t format, snd_pcm_access_t access, unsigned int channels, unsigned int rate, int soft_resample, unsigned int latency) { require(); return api.snd_pcm_set_params(pcm, format, access, channels, rate, soft_resample, latency); }
STUB snd_pcm_state_t snd_pcm_state(snd_pcm_t *pcm) { require(); return api.snd_pcm_state(pcm); }
STUB int snd_pcm_sw_params(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) { require(); return api.snd_pcm_sw_params(pcm, params); }
STUB int snd_pcm_sw_params_current(snd_pcm_t *pcm, snd_pcm_sw_params_t *params) { require(); return api.snd_pcm_sw_params_current(pcm, params); }
STUB void snd_pcm_sw_params_free(snd_pcm_sw_params_t *obj) { require(); api.snd_pcm_sw_params_free(obj); }
STUB int snd_pcm_sw_params_malloc(snd_pcm_sw_params_t **ptr) { require(); return api.snd_pcm_sw_params_malloc(ptr); }
STUB int snd_pcm_sw_params_set_start_threshold(snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val) { require(); return api.snd_pcm_sw_params_set_start_threshold(pcm, params, val); }
STUB snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) { require(); return api.snd_pcm_writei(pcm, buffer, size); }
STUB const char * snd_strerror(int errnum) { require(); return api.snd_strerror(errnum); }
