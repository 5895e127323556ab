// libsoxr (Debian: libsoxr-dev), found with pkg-config "soxr".
#include <soxr.h>
