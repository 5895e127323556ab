/* The one dlopen loader of CSndfile, CSoxr, CCurl, CALSA and CQpidProton (CLazyLibrary.h). */
#define _GNU_SOURCE
#include "CLazyLibrary.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void bind(tuneup_lazy_library *library) {
    void *handle = dlopen(library->file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(library->failure, sizeof library->failure, "%s (Debian package %s): %s", library->purpose,
                 library->package, dlerror());
        return;
    }
    for (unsigned i = 0; i < library->count; i++) {
        if (!(library->slots[i] = dlsym(handle, library->symbols[i]))) {
            snprintf(library->failure, sizeof library->failure, "the installed %s has no %s (Debian package %s)",
                     library->file, library->symbols[i], library->package);
            return;
        }
    }
    __atomic_store_n(&library->loaded, 1, __ATOMIC_RELEASE);
}

const char *tuneup_lazy_load(tuneup_lazy_library *library) {
    if (__atomic_load_n(&library->loaded, __ATOMIC_ACQUIRE)) return NULL;
    pthread_mutex_lock(&library->lock);
    if (!library->attempted) {
        library->attempted = 1;
        bind(library);
    }
    pthread_mutex_unlock(&library->lock);
    return library->loaded ? NULL : library->failure;
}

void tuneup_lazy_require(tuneup_lazy_library *library) {
    const char *why = tuneup_lazy_load(library);
    if (why) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, why);
        exit(74);
    }
}
