// libsndfile (Debian: libsndfile1-dev), found with pkg-config "sndfile".
#include <sndfile.h>
