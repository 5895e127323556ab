/* The sf_* functions Tuneup calls, each forwarding to libsndfile opened with dlopen on first use (CSndfile.h). */
#include "CSndfile.h"

#include "CLazyLibrary.h"

#include <dlfcn.h>
#include <pthread.h>

static struct {
    SNDFILE *(*sf_open)(const char *, int, SF_INFO *);
    SNDFILE *(*sf_open_fd)(int, int, SF_INFO *, int);
    SNDFILE *(*sf_open_virtual)(SF_VIRTUAL_IO *, int, SF_INFO *, void *);
    int (*sf_close)(SNDFILE *);
    int (*sf_command)(SNDFILE *, int, void *, int);
    int (*sf_error)(SNDFILE *);
    const char *(*sf_error_number)(int);
    const char *(*sf_strerror)(SNDFILE *);
    const char *(*sf_get_string)(SNDFILE *, int);
    int (*sf_set_string)(SNDFILE *, int, const char *);
    sf_count_t (*sf_seek)(SNDFILE *, sf_count_t, int);
    sf_count_t (*sf_readf_double)(SNDFILE *, double *, sf_count_t);
    sf_count_t (*sf_writef_double)(SNDFILE *, const double *, sf_count_t);
    sf_count_t (*sf_writef_int)(SNDFILE *, const int *, sf_count_t);
    sf_count_t (*sf_writef_short)(SNDFILE *, const short *, sf_count_t);
} api;
static const char *const symbols[] = {"sf_open", "sf_open_fd", "sf_open_virtual", "sf_close", "sf_command", "sf_error", "sf_error_number", "sf_strerror", "sf_get_string", "sf_set_string", "sf_seek", "sf_readf_double", "sf_writef_double", "sf_writef_int", "sf_writef_short"};
_Static_assert(sizeof api == sizeof symbols / sizeof *symbols * sizeof(void *), "one symbol per function pointer, in order");
static tuneup_lazy_library library = {
    .file = "libsndfile.so.1", .package = "libsndfile1", .purpose = "audio decoding needs libsndfile",
    .symbols = symbols, .slots = (void **)&api, .count = sizeof symbols / sizeof *symbols,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

const char *tuneup_sndfile_load(void) { return tuneup_lazy_load(&library); }

/* A stub called without tuneup_sndfile_load's check, with the library missing: the one line, exit 74. */
static void require(void) { tuneup_lazy_require(&library); }

/* Hidden: libsndfile's own calls to its exported functions, and other libraries', never land here. */
#define STUB __attribute__((visibility("hidden")))
STUB SNDFILE *sf_open(const char *path, int mode, SF_INFO *info) { require(); return api.sf_open(path, mode, info); }
STUB SNDFILE *sf_open_fd(int fd, int mode, SF_INFO *info, int close_desc) { require(); return api.sf_open_fd(fd, mode, info, close_desc); }
STUB SNDFILE *sf_open_virtual(SF_VIRTUAL_IO *io, int mode, SF_INFO *info, void *user) { require(); return api.sf_open_virtual(io, mode, info, user); }
STUB int sf_close(SNDFILE *file) { require(); return api.sf_close(file); }
STUB int sf_command(SNDFILE *file, int command, void *data, int size) { require(); return api.sf_command(file, command, data, size); }
STUB int sf_error(SNDFILE *file) { require(); return api.sf_error(file); }
STUB const char *sf_error_number(int number) { require(); return api.sf_error_number(number); }
STUB const char *sf_strerror(SNDFILE *file) { require(); return api.sf_strerror(file); }
STUB const char *sf_get_string(SNDFILE *file, int type) { require(); return api.sf_get_string(file, type); }
STUB int sf_set_string(SNDFILE *file, int type, const char *text) { require(); return api.sf_set_string(file, type, text); }
STUB sf_count_t sf_seek(SNDFILE *file, sf_count_t frames, int whence) { require(); return api.sf_seek(file, frames, whence); }
STUB sf_count_t sf_readf_double(SNDFILE *file, double *data, sf_count_t frames) { require(); return api.sf_readf_double(file, data, frames); }
STUB sf_count_t sf_writef_double(SNDFILE *file, const double *data, sf_count_t frames) { require(); return api.sf_writef_double(file, data, frames); }
STUB sf_count_t sf_writef_int(SNDFILE *file, const int *data, sf_count_t frames) { require(); return api.sf_writef_int(file, data, frames); }
STUB sf_count_t sf_writef_short(SNDFILE *file, const short *data, sf_count_t frames) { require(); return api.sf_writef_short(file, data, frames); }

/* libmpg123, which decodes MP3 inside libsndfile, prints notes on damaged data to stderr ("Note: Illegal
 * Audio-MPEG-Header ...", "[src/libmpg123/layer3.c:...] error: ...") unless its handle is quiet, and libsndfile never
 * makes it quiet: a damaged MP3 filled the terminal around the one line Tuneup says (issue 19 defect 8). libsndfile's
 * call to mpg123_new lands here (exported by the executable, which comes first in the lookup scope of the libsndfile
 * opened above with RTLD_LOCAL); it makes the real handle and adds MPG123_QUIET. libsndfile then only adds and
 * removes other flags. What went wrong still reaches the user through libsndfile's error, as one line. */
#define TUNEUP_MPG123_ADD_FLAGS 2 /* enum mpg123_parms */
#define TUNEUP_MPG123_QUIET 0x20  /* enum mpg123_param_flags */
static void *(*real_mpg123_new)(const char *, int *);
static int (*real_mpg123_param)(void *, int, long, double);
static pthread_once_t mpg123_once = PTHREAD_ONCE_INIT;

static void find_mpg123(void) {
    /* Already mapped as libsndfile's dependency when libsndfile calls; RTLD_NOLOAD never loads it for us. */
    void *lib = dlopen("libmpg123.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) return;
    real_mpg123_new = (void *(*)(const char *, int *))dlsym(lib, "mpg123_new");
    real_mpg123_param = (int (*)(void *, int, long, double))dlsym(lib, "mpg123_param");
}

void *mpg123_new(const char *decoder, int *error) {
    pthread_once(&mpg123_once, find_mpg123);
    if (!real_mpg123_new) {
        if (error) *error = -1; /* MPG123_ERR */
        return NULL;
    }
    void *handle = real_mpg123_new(decoder, error);
    if (handle && real_mpg123_param) real_mpg123_param(handle, TUNEUP_MPG123_ADD_FLAGS, TUNEUP_MPG123_QUIET, 0.0);
    return handle;
}
