#ifndef SPOUT_CLIBPQ_SHIM_H
#define SPOUT_CLIBPQ_SHIM_H
// libpq's client API (package libpq-dev; pkg-config libpq).
#include <libpq-fe.h>
#endif
