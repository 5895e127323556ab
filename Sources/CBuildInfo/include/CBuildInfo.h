#ifndef CBUILDINFO_H
#define CBUILDINFO_H

/* The commit this build was made from: TUNEUP_COMMIT in the environment of `swift build` (Package.swift passes it
 * here as a C define; tools/package.sh's docs say how), or "" when the build was not given one. */
const char *tuneup_build_commit(void);

#endif
