#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* libmicrohttpd's start, info and option calls are variadic: Swift cannot call them,
   so each use gets one typed wrapper here. */

/** The unescape callback of MHD_OPTION_UNESCAPE_CALLBACK (the header names no typedef). */
typedef size_t (*lv_mhd_unescape_callback)(void *cls, struct MHD_Connection *connection, char *s);

/** Options of the daemon the HTTPServer target starts; 0 means "MHD's default" for the numbers. */
struct lv_mhd_options {
    int listen_fd;                    /* an already bound and listening socket; -1: none, connections come
                                         through MHD_add_connection (spread over the pool by socket number) */
    unsigned int thread_pool_size;    /* > 1: that many polling threads */
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;
    unsigned int connection_timeout;  /* seconds of inactivity before a connection is closed */
    size_t connection_memory_limit;   /* per connection: request line + headers + buffers */
    int turbo;                        /* MHD_USE_TURBO */
};

/** Starts an internally polled (epoll) daemon with suspend/resume on an existing listen socket.
    `notify` hears every connection open and close (MHD calls it with CLOSED before it closes the socket). */
static inline struct MHD_Daemon *lv_mhd_start(
    const struct lv_mhd_options *o,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    lv_mhd_unescape_callback unescape, void *unescape_cls)
{
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (o->turbo) flags |= MHD_USE_TURBO;
    if (o->listen_fd < 0) flags |= MHD_USE_NO_LISTEN_SOCKET;
    struct MHD_OptionItem items[12];
    int n = 0;
    if (o->listen_fd >= 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, (intptr_t)o->listen_fd, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_cls };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape, unescape_cls };
    if (o->thread_pool_size > 1)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)o->thread_pool_size, NULL };
    if (o->connection_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, (intptr_t)o->connection_limit, NULL };
    if (o->per_ip_connection_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)o->per_ip_connection_limit, NULL };
    if (o->connection_timeout > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->connection_timeout, NULL };
    if (o->connection_memory_limit > 0)
        items[n++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory_limit, NULL };
    items[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, items, MHD_OPTION_END);
}

/** The peer address of a connection, or NULL. */
static inline const struct sockaddr *lv_mhd_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

/** The socket of a connection, or -1. */
static inline int lv_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/** The number of open connections of a daemon. */
static inline unsigned int lv_mhd_current_connections(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

#endif
