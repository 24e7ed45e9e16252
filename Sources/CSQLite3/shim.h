#ifndef SPOUT_CSQLITE3_SHIM_H
#define SPOUT_CSQLITE3_SHIM_H
// SQLite's C API (package libsqlite3-dev; pkg-config sqlite3).
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type spout_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// The first region of the WAL-index of `db`'s main database as SQLite itself maps it (the
// file's VFS xShmMap, bExtend 0): no descriptor of the caller's own, so no POSIX lock of
// SQLite's is dropped when one closes. NULL when the database has no WAL-index mapped yet or
// its VFS has none. The region stays mapped while `db` stays open.
static inline const void *spout_sqlite_wal_index(sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0) return 0;
    const sqlite3_io_methods *methods = file->pMethods;
    if (methods == 0 || methods->iVersion < 2 || methods->xShmMap == 0) return 0;
    volatile void *region = 0;
    if (methods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return 0;
    return (const void *)region;
}

// Whether the WAL-index header's layout is the one described below: its version field (the
// first 4 bytes, which no commit changes) is 3007000.
static inline int spout_sqlite_wal_index_is_known(const void *header) {
    uint32_t version;
    memcpy(&version, header, 4);
    return version == 3007000;
}

// The WAL-index header (https://sqlite.org/walformat.html, "The WAL-Index Header"): two
// 48-byte copies at the start of the first region, which a committing writer rewrites, the
// second copy first. As SQLite's own readers do, copies the first copy into words[0..5] and
// answers 1 only when the second matches it, the header is initialised and its layout is this
// one (spout_sqlite_wal_index_is_known); 0 otherwise (a writer is publishing, or another format).
static inline int spout_sqlite_wal_index_header(const void *region, uint64_t words[6]) {
    uint64_t second[6];
    memcpy(words, region, 48);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(second, (const unsigned char *)region + 48, 48);
    if (memcmp(words, second, 48) != 0) return 0;
    const unsigned char isInit = ((const unsigned char *)words)[12];
    return isInit != 0 && spout_sqlite_wal_index_is_known(words);
}
#endif
