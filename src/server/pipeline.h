/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h - the ingest path every transport shares (OTLP/HTTP
 * protobuf and JSON, OTLP/gRPC, Pyroscope /ingest), after
 * authorization and body reading:
 *
 *   inflate (gzip; max_decompressed, max_ratio)
 *     -> decode (format/) -> limits (samples, series, labels per request)
 *     -> signal control (rules.h) -> store (WAL fsync, then head)
 *     -> usage counters and metrics.
 *
 * Outcome: a struct server_ingest_out whose @fail classifies a refusal
 * the way each transport needs it (server_fail_http, server_fail_grpc)
 * and whose @msg says what is wrong, naming the limit when one was hit
 * ("limit max_series (10000) exceeded: the request has 12000 series").
 * A request is stored whole or not at all; what signal control removed
 * is reported in @partial (OTLP partial_success).
 *
 * Back-pressure: server_ingest_enter admits at most limits.max_inflight
 * ingest requests at a time; the rest are refused right away (429 /
 * gRPC UNAVAILABLE, with Retry-After) so memory stays bounded under load.
 */
#ifndef PROF_SERVER_PIPELINE_H
#define PROF_SERVER_PIPELINE_H

#include "base/buf.h"
#include "base/compat.h"
#include "model/profile.h"
#include "store/wal_pprof.h"

struct server;
struct server_dataset;

/** enum server_fail - why an ingest was refused. */
enum server_fail {
	SERVER_OK = 0,
	SERVER_FAIL_BAD_INPUT,	  /* 400, INVALID_ARGUMENT: undecodable or inconsistent */
	SERVER_FAIL_UNAUTHORIZED, /* 401, UNAUTHENTICATED */
	SERVER_FAIL_FORBIDDEN,	  /* 403, PERMISSION_DENIED */
	SERVER_FAIL_NOT_FOUND,	  /* 404, NOT_FOUND: unknown dataset */
	SERVER_FAIL_TOO_LARGE,	  /* 413, RESOURCE_EXHAUSTED: a size/count limit */
	SERVER_FAIL_MEDIA_TYPE,	  /* 415, INVALID_ARGUMENT: content type or encoding */
	SERVER_FAIL_OVERLOADED,	  /* 429, UNAVAILABLE (+ Retry-After): too many in flight */
	SERVER_FAIL_UNAVAILABLE,  /* 503, UNAVAILABLE (+ Retry-After): storage failed */
	SERVER_FAIL_INSUFFICIENT, /* 507, UNAVAILABLE: disk full */
};

/** struct server_ingest_out - what an ingest did. */
struct server_ingest_out {
	enum server_fail fail;
	const char *reason; /* static metric label of a refusal: "max_body", "decode", ... */
	char msg[768];	    /* why, for the client and the access log */
	uint64_t profiles;  /* model profiles stored */
	uint64_t received, accepted, dropped; /* sample rows (usage.h) */
	uint64_t rejected_profiles;	      /* profiles signal control removed entirely */
	char partial[320];		      /* partial-success message, "" when none */
	char skipped[320]; /* what a decoder skipped (model_skipped_text), "" when none */
};

/** server_fail_http() - the HTTP status of @f (200 for SERVER_OK). */
unsigned server_fail_http(enum server_fail f);
/** server_fail_grpc() - the gRPC status code of @f (0 for SERVER_OK). */
int server_fail_grpc(enum server_fail f);

/**
 * server_ingest_fail() - record a refusal in @out (and in the reject
 * metric under @reason, a static string). Returns false, for
 * `return server_ingest_fail(...)` in bool functions.
 */
bool server_ingest_fail(struct server *srv, struct server_ingest_out *out, enum server_fail f,
			const char *reason, const char *fmt, ...) PROF_PRINTF(5, 6);

/**
 * server_ingest_enter() - admit one ingest request, or refuse it when
 * limits.max_inflight are in flight (then @out says so). Pair each true
 * return with server_ingest_leave. Thread-safe.
 */
bool server_ingest_enter(struct server *srv, struct server_ingest_out *out);
void server_ingest_leave(struct server *srv);

/**
 * server_inflate() - when @data (@n bytes) is gzip (magic 1f 8b, or
 * @force), inflate it into @tmp under limits.max_decompressed and
 * limits.max_ratio and point *@data / *@n at the result; otherwise leave
 * them. @what names the part for messages ("request body", "form field
 * 'profile'"). False after filling @out (413 for a limit, 400 for bad
 * gzip).
 */
bool server_inflate(struct server *srv, const void **data, size_t *n, bool force, struct buf *tmp,
		    const char *what, struct server_ingest_out *out);

/**
 * server_ingest_profiles() - check, filter and store @n profiles (owned
 * by the caller; modified by signal control) in dataset @ds. @otlp is
 * the OTLP protobuf request they were decoded from, unchanged, or NULL
 * (see store_ingest_profiles); @pprof, when not NULL, holds for each
 * profile the pprof bytes it was decoded from and how its timestamps
 * moved (store_ingest_pprof), so the log keeps those instead of an OTLP
 * encoding; signal control that changes a profile makes both unused.
 * @source names the route for metrics
 * ("otlp", "otlp-json", "otlp-grpc", "pyroscope-pprof", ...; static).
 * Returns true when stored (or nothing needed storing), else false with
 * @out filled.
 */
bool server_ingest_profiles(struct server *srv, struct server_dataset *ds,
			    struct model_profile *const *p, size_t n, const void *otlp,
			    size_t otlp_len, const struct store_pprof_src *pprof,
			    const char *source, struct server_ingest_out *out);

/**
 * server_ingest_otlp() - decode an ExportProfilesServiceRequest (@json:
 * OTLP/JSON, else protobuf; already inflated) and store it as above.
 */
bool server_ingest_otlp(struct server *srv, struct server_dataset *ds, const void *data, size_t n,
			bool json, const char *source, struct server_ingest_out *out);

/** server_fail_from_rc() - the class of a decoder or store error code. */
enum server_fail server_fail_from_rc(int rc);

/**
 * server_otlp_response() - append the ExportProfilesServiceResponse for
 * a successful @out to @b: protobuf (empty, or partial_success with
 * rejected_profiles and error_message) or, with @json, its OTLP/JSON form
 * ({} or {"partialSuccess":{"rejectedProfiles":"N","errorMessage":"..."}}).
 */
void server_otlp_response(const struct server_ingest_out *out, bool json, struct buf *b);

/**
 * server_rpc_status() - append a google.rpc.Status {code, message} to
 * @b, protobuf or (@json) JSON, as OTLP/HTTP error bodies are.
 */
void server_rpc_status(int code, const char *msg, bool json, struct buf *b);

#endif
