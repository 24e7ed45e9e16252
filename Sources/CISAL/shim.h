#ifndef SPOUT_CISAL_SHIM_H
#define SPOUT_CISAL_SHIM_H
// Intel's ISA-L (package libisal-dev; pkg-config libisal): its deflate compressor, igzip,
// for gzip- and deflate-encoded bodies.
#include <isa-l/igzip_lib.h>

// The buffer a streaming compressor at level 1 needs, in the size ISA-L calls "small" (a
// hash table plus room for 16 Ki tokens per block): the larger sizes it suggests were no
// faster on Spout's streams. (A macro of macros, which Swift cannot import.)
static inline uint32_t spout_isal_level1_buffer_size(void) {
    return ISAL_DEF_LVL1_SMALL;
}

// The largest block header ISA-L writes (a dynamic Huffman table): part of the room a body
// compressed in one call may need beyond its own size.
static inline uint32_t spout_isal_maximum_header_size(void) {
    return ISAL_DEF_MAX_HDR_SIZE;
}
#endif
