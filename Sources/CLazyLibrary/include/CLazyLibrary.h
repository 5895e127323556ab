#ifndef TUNEUP_CLAZYLIBRARY_H
#define TUNEUP_CLAZYLIBRARY_H

/* A shared library opened with dlopen on first use instead of linked, so that only the commands that need it map it
 * (and its dependencies) at all: CSndfile, CSoxr, CCurl, CALSA and CQpidProton each describe their library with one
 * of these and forward their stubs through its function pointers. */
#include <pthread.h>

typedef struct tuneup_lazy_library {
    const char *file;            /* the soname: "libsndfile.so.1" */
    const char *package;         /* the Debian package that installs it */
    const char *purpose;         /* the start of the line when it is missing: "audio decoding needs libsndfile" */
    const char *const *symbols;  /* the functions to bind, in the order of `slots` */
    void **slots;                /* where each function's address goes */
    unsigned count;
    pthread_mutex_t lock;        /* PTHREAD_MUTEX_INITIALIZER */
    int attempted, loaded;
    char failure[512];
} tuneup_lazy_library;

/* NULL once the library is loaded with every symbol (for good), else one line saying why it cannot be (the same line
 * on every call: the first attempt's answer stands). Thread-safe. */
const char *tuneup_lazy_load(tuneup_lazy_library *library);

/* For a stub called without that check: loads the library, or prints "PROGRAM: LINE" to stderr and exits with 74 (as
 * AudioInput's library-missing error does). */
void tuneup_lazy_require(tuneup_lazy_library *library);

#endif
