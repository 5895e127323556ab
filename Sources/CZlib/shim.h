/* Debian's zlib (zlib1g-dev): its CRC-32, which the speaker protocol's datagrams and control frames carry. */
#include <zlib.h>
