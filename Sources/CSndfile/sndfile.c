/* The sf_* functions Tuneup calls, each forwarding to libsndfile opened with dlopen on first use (CSndfile.h). */
#include "CSndfile.h"

#include "CLazyLibrary.h"

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
