#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>

/// A notice processor that drops NOTICEs instead of printing them to stderr.
static void clibpq_quiet_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void clibpq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, clibpq_quiet_notice, NULL);
}
#endif
