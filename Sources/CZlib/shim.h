#ifndef SPOUT_CZLIB_SHIM_H
#define SPOUT_CZLIB_SHIM_H
// zlib (package zlib1g-dev; pkg-config zlib), for gzip-encoded streams.
#include <zlib.h>

// deflateInit2 is a macro (it passes the library's version and the stream's size), which
// Swift cannot import.
static inline int spout_deflate_init_gzip(z_streamp stream, int level, int memoryLevel) {
    // windowBits 15 + 16: a gzip header and trailer around the deflate data.
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, memoryLevel, Z_DEFAULT_STRATEGY);
}
#endif
