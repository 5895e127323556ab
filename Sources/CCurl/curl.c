/* The curl_* functions Tuneup calls, each forwarding to libcurl opened with dlopen on first use (CCurl.h). */
#define CURL_DISABLE_TYPECHECK
#include "CCurl.h"

#include "CLazyLibrary.h"

static struct {
    CURLcode (*curl_global_init)(long);
    CURL *(*curl_easy_init)(void);
    void (*curl_easy_cleanup)(CURL *);
    CURLcode (*curl_easy_perform)(CURL *);
    const char *(*curl_easy_strerror)(CURLcode);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
} api;
static const char *const symbols[] = {"curl_global_init", "curl_easy_init", "curl_easy_cleanup", "curl_easy_perform", "curl_easy_strerror", "curl_easy_setopt", "curl_easy_getinfo"};
_Static_assert(sizeof api == sizeof symbols / sizeof *symbols * sizeof(void *), "one symbol per function pointer, in order");
static tuneup_lazy_library library = {
    .file = "libcurl.so.4", .package = "libcurl4", .purpose = "HTTP streams need libcurl",
    .symbols = symbols, .slots = (void **)&api, .count = sizeof symbols / sizeof *symbols,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

const char *tuneup_curl_load(void) { return tuneup_lazy_load(&library); }

/* A stub called without tuneup_curl_load's check, with the library missing: the one line, exit 74. */
static void require(void) { tuneup_lazy_require(&library); }

/* Hidden: libcurl's own calls to its exported functions, and other libraries', never land here. */
#define STUB __attribute__((visibility("hidden")))
STUB CURLcode curl_global_init(long flags) { require(); return api.curl_global_init(flags); }
STUB CURL *curl_easy_init(void) { require(); return api.curl_easy_init(); }
STUB void curl_easy_cleanup(CURL *curl) { require(); api.curl_easy_cleanup(curl); }
STUB CURLcode curl_easy_perform(CURL *curl) { require(); return api.curl_easy_perform(curl); }
STUB const char *curl_easy_strerror(CURLcode code) { require(); return api.curl_easy_strerror(code); }

CURLcode tuneup_curl_set_long(CURL *curl, CURLoption option, long value) { require(); return api.setopt(curl, option, value); }
CURLcode tuneup_curl_set_pointer(CURL *curl, CURLoption option, void *value) { require(); return api.setopt(curl, option, value); }
CURLcode tuneup_curl_set_string(CURL *curl, CURLoption option, const char *value) { require(); return api.setopt(curl, option, value); }
CURLcode tuneup_curl_set_write_function(CURL *curl, size_t (*function)(char *, size_t, size_t, void *)) {
    require();
    return api.setopt(curl, CURLOPT_WRITEFUNCTION, function);
}
CURLcode tuneup_curl_set_progress_function(CURL *curl,
                                           int (*function)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    require();
    return api.setopt(curl, CURLOPT_XFERINFOFUNCTION, function);
}
CURLcode tuneup_curl_get_long(CURL *curl, CURLINFO info, long *value) { require(); return api.getinfo(curl, info, value); }
CURLcode tuneup_curl_get_off(CURL *curl, CURLINFO info, curl_off_t *value) { require(); return api.getinfo(curl, info, value); }
CURLcode tuneup_curl_get_string(CURL *curl, CURLINFO info, const char **value) { require(); return api.getinfo(curl, info, value); }
