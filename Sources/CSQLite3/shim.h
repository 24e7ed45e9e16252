#ifndef SPOUT_CSQLITE3_SHIM_H
#define SPOUT_CSQLITE3_SHIM_H
// SQLite's C API (package libsqlite3-dev; pkg-config sqlite3).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a function pointer, which Swift cannot import.
static inline sqlite3_destructor_type spout_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
