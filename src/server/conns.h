/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conns.h - the connection guard: every client connection of the HTTP
 * and gRPC listeners, counted per client address, with deadlines that
 * trickled bytes cannot extend.
 *
 * Why: libmicrohttpd's MHD_OPTION_CONNECTION_TIMEOUT is an idle timeout
 * that each received byte resets, so a client sending one header byte a
 * second (slowloris) or announcing a large body and sending nothing keeps
 * its connection as long as it likes; its own connection and per-IP
 * limits refuse silently, with nothing to count. The guard tracks each
 * connection's phase and a sweep thread closes those past their phase's
 * deadline (shutdown(2) on the socket: the listener sees the end of the
 * stream and closes it the normal way, so no descriptor changes hands
 * under it):
 *
 *   phase   begins                        ends                      limit
 *   NEW     accept                        request headers complete  header_timeout (absolute)
 *   BODY    headers complete              body complete             min_upload_bps over each
 *                                                                   upload_window
 *   BUSY    body complete (handler runs)  response sent             none (the handler's own)
 *   IDLE    response sent (keep-alive)    next request's headers    idle_timeout (absolute)
 *
 * A connection that never sends a complete request is thus closed
 * header_timeout after it was accepted whatever it trickles, a keep-alive
 * connection idle_timeout after its last answer, and an upload that does
 * not move min_upload_bps * upload_window bytes in a window is closed.
 * Admission (server_conns_open): at most max_conns connections in all and
 * max_per_client from one client address (IPv4 address or whole IPv6
 * address; a v4-mapped v6 address counts as the v4 one); beyond them the
 * connection is refused and counted by reason.
 *
 * Metrics (server_conns_write_metrics): open connections, the limits,
 * refusals and closes by reason.
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * guards the table (operations are O(1) except the sweep, O(open)).
 */
#ifndef PROF_SERVER_CONNS_H
#define PROF_SERVER_CONNS_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"

#include <sys/socket.h>

#define SERVER_CONNS_DEFAULT_MAX	    8192
#define SERVER_CONNS_DEFAULT_PER_CLIENT	    256
#define SERVER_CONNS_DEFAULT_HEADER_NS	    (10 * 1000000000LL)
#define SERVER_CONNS_DEFAULT_IDLE_NS	    (60 * 1000000000LL)
#define SERVER_CONNS_DEFAULT_MIN_UPLOAD_BPS 4096
#define SERVER_CONNS_DEFAULT_WINDOW_NS	    (10 * 1000000000LL)

/** struct server_conn_limits - the guard's limits; 0 fields take the defaults above. */
struct server_conn_limits {
	unsigned max_conns;	   /* open connections in all (every listener) */
	unsigned max_per_client;   /* open connections from one client address */
	int64_t header_timeout_ns; /* accept -> request headers complete */
	int64_t idle_timeout_ns;   /* answer sent -> next request's headers complete */
	uint64_t min_upload_bps;   /* bytes per second a body must move ... */
	int64_t upload_window_ns;  /* ... measured over each window this long */
};

/** server_conn_limits_fill() - replace the 0 fields of @l by the defaults. */
void server_conn_limits_fill(struct server_conn_limits *l);

/** enum server_conn_phase - see the table at the top. */
enum server_conn_phase {
	SERVER_CONN_NEW,
	SERVER_CONN_BODY,
	SERVER_CONN_BUSY,
	SERVER_CONN_IDLE,
};

struct server_conns;
struct server_conn;

/**
 * server_conns_new() - a guard with limits @l (copied, defaults filled)
 * and its sweep thread (one pass every 250 ms). *@out is the caller's,
 * freed with server_conns_free. -EAGAIN when the thread cannot start.
 */
int server_conns_new(const struct server_conn_limits *l, struct server_conns **out,
		     struct prof_err *err);

/**
 * server_conns_free() - stop the sweep and free the guard. Every
 * connection must have been closed (server_conns_close) before; NULL ok.
 */
void server_conns_free(struct server_conns *g);

/**
 * server_conns_open() - admit the connection on socket @fd from @addr
 * (@len bytes; AF_INET or AF_INET6, anything else counts as one address)
 * in phase NEW, or refuse it. Returns the entry, owned by the guard until
 * server_conns_close, or NULL when refused: over max_per_client (counted
 * as reason "per_client") or max_conns ("total"); the caller then closes
 * @fd. @fd must stay open (and this connection's) until server_conns_close.
 */
struct server_conn *server_conns_open(struct server_conns *g, int fd, const struct sockaddr *addr,
				      socklen_t len);

/** server_conns_close() - forget @c (the socket is about to be closed); NULL ok. */
void server_conns_close(struct server_conns *g, struct server_conn *c);

/**
 * server_conns_phase() - @c enters @phase now (BODY resets the upload
 * byte count). NULL @c is ignored.
 */
void server_conns_phase(struct server_conns *g, struct server_conn *c,
			enum server_conn_phase phase);

/** server_conns_body() - @n more body bytes arrived on @c (phase BODY); NULL ok. */
void server_conns_body(struct server_conns *g, struct server_conn *c, size_t n);

/**
 * server_conns_sweep() - close (shutdown(2)) every connection past its
 * deadline at @now_ns (prof_now_ns clock); what the sweep thread does.
 * Returns how many it closed. For tests.
 */
size_t server_conns_sweep(struct server_conns *g, int64_t now_ns);

/** server_conns_open_count() - connections open now. */
unsigned server_conns_open_count(struct server_conns *g);

/**
 * server_conns_write_metrics() - append the guard's Prometheus families
 * to @b: profd_connections_open, profd_connections_limit,
 * profd_connections_per_client_limit, profd_connections_refused_total
 * {reason="total"|"per_client"}, profd_connections_closed_total
 * {reason="header_timeout"|"idle_timeout"|"slow_upload"}.
 */
void server_conns_write_metrics(struct server_conns *g, struct buf *b);

#endif
