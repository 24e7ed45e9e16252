#ifndef SPOUT_CZLIB_SHIM_H
#define SPOUT_CZLIB_SHIM_H
// zlib (package zlib1g-dev; pkg-config zlib), for gzip- and deflate-encoded bodies.
#include <zlib.h>

// deflateInit2 is a macro (it passes the library's version and the stream's size), which
// Swift cannot import. `windowBits` 9...15 is the window's size (log2); `gzip` wraps the
// deflate data in a gzip header and trailer (windowBits + 16), otherwise in zlib's (the
// HTTP `deflate` coding, RFC 9110 §8.4.1.2).
static inline int spout_deflate_init(z_streamp stream, int level, int windowBits, int memoryLevel, int gzip) {
    return deflateInit2(stream, level, Z_DEFLATED, gzip ? windowBits + 16 : windowBits, memoryLevel, Z_DEFAULT_STRATEGY);
}
#endif
