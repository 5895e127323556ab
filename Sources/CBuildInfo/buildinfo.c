/* The commit the build was made from (CBuildInfo.h). A C define, so that a new commit recompiles this file alone. */
#include "CBuildInfo.h"

#ifndef TUNEUP_COMMIT
#define TUNEUP_COMMIT ""
#endif

const char *tuneup_build_commit(void) { return TUNEUP_COMMIT; }
