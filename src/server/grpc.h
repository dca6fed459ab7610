/* SPDX-License-Identifier: Apache-2.0 */
/*
 * grpc.h - OTLP/gRPC profiles ingest over HTTP/2 with libnghttp2:
 * cleartext (h2c, prior knowledge, as gRPC clients speak it without TLS),
 * or with the server's --tls-cert over TLS (tls.h: ALPN h2, client
 * certificates with --tls-client-ca; the handshake runs in the event
 * loop, within the guard's header deadline):
 *
 *   POST /opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export
 *
 * (docs/formats.md "OTLP transport"). gRPC framing: each message is a 5-byte prefix
 * (compressed flag, big-endian length) and the protobuf; a compressed
 * message uses the grpc-encoding named in the request headers (gzip or
 * identity). The response is HEADERS (:status 200, content-type
 * application/grpc), one DATA message (ExportProfilesServiceResponse,
 * with partial_success when signal control dropped part of the request)
 * and trailers grpc-status / grpc-message (percent-encoded); a refusal is
 * a trailers-only response. Codes: INVALID_ARGUMENT (bad data, label
 * limits, wrong content-type), UNAUTHENTICATED (missing or wrong bearer
 * token in `authorization` metadata), PERMISSION_DENIED, NOT_FOUND
 * (unknown dataset), RESOURCE_EXHAUSTED (message, inflated size, samples
 * or series over a limit), UNAVAILABLE (overloaded or storage failed;
 * retryable), status 12 (another method). Dataset selection and
 * authorization are those of HTTP (tenant.h), from the `authorization`
 * and `x-profd-dataset` metadata.
 *
 * Connections are admitted and timed by the server's connection guard
 * (conns.h: per-client and total limits, header, idle and upload
 * deadlines, shared with HTTP). Threads: one event loop serves every
 * connection (non-blocking sockets in epoll: thousands of idle or slow
 * connections cost no thread); each completed stream is handled on the
 * server's ingest worker pool (workers.h: decode, store, the WAL fsync),
 * so the streams of one connection and of many run side by side, up to
 * limits.max_inflight. A stream's message is capped at limits.max_body
 * bytes before decompression (RESOURCE_EXHAUSTED beyond).
 */
#ifndef PROF_SERVER_GRPC_H
#define PROF_SERVER_GRPC_H

#include "base/compat.h"
#include "base/err.h"

#define SERVER_GRPC_EXPORT_PATH \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"

struct server;
struct server_grpc;

/**
 * server_grpc_start() - listen on @listen ("host:port") and serve gRPC
 * for @srv (lent; must outlive the gRPC server). *@out is the caller's,
 * stopped with server_grpc_stop. Errors: -EINVAL for a bad address,
 * -errno when it cannot be bound; @err says which.
 */
int server_grpc_start(struct server *srv, const char *listen, struct server_grpc **out,
		      struct prof_err *err);

/** server_grpc_port() - the bound TCP port. */
unsigned server_grpc_port(const struct server_grpc *g);

/**
 * server_grpc_stop() - stop accepting, let calls in progress finish (up
 * to 10 s), close every connection, free. NULL is allowed.
 */
void server_grpc_stop(struct server_grpc *g);

#endif
