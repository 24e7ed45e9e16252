#ifndef SPOUT_CZSTD_SHIM_H
#define SPOUT_CZSTD_SHIM_H
// Zstandard (package libzstd-dev; pkg-config libzstd), for zstd-encoded streams.
#include <zstd.h>
#endif
