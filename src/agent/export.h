/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.h - sends the agent's profiles to a server as OTLP/HTTP:
 * POST URL/v1development/profiles, body = ExportProfilesServiceRequest
 * (protobuf, fmt_otlp_encode), Content-Type application/x-protobuf,
 * Content-Encoding gzip (OTLP/HTTP spec, docs/formats.md "OTLP transport").
 *
 * The caller's thread encodes, compresses and queues each request; a
 * sender thread posts them in order with libcurl, so a slow or hung
 * server never stops sampling. The queue is bounded in bytes: when a new
 * request does not fit, the oldest queued ones are dropped and counted.
 * Failed posts are logged; transient failures (connection errors, 5xx,
 * 408, 429) are retried with exponential backoff (1 s doubling up to
 * max_backoff_ms, each wait drawn uniformly from its upper half so agents
 * restarted together do not retry in step), other 4xx answers drop the
 * request (retrying cannot fix it). Closing tries every queued request
 * once more within a deadline, then drops the rest.
 *
 * Requests carry "Authorization: Bearer TOKEN" when a token is given and
 * "X-Profd-Dataset: NAME" when a dataset is (the profd server's tenant
 * selection, server/tenant.h).
 *
 * OTLP/gRPC instead, for a server URL grpc://HOST:PORT (HTTP/2 without
 * TLS, "h2c", with prior knowledge) or grpcs://HOST:PORT (HTTP/2 over
 * TLS): POST /opentelemetry.proto.collector.profiles.v1development.
 * ProfilesService/Export, Content-Type application/grpc+proto, the same
 * gzip body as one compressed length-prefixed message (grpc-encoding
 * gzip; gRPC over HTTP/2 protocol spec), the token and dataset as
 * metadata; the outcome is the grpc-status trailer: 0 is success, the
 * codes the OTLP spec calls retryable (UNAVAILABLE, RESOURCE_EXHAUSTED,
 * DEADLINE_EXCEEDED, ABORTED, CANCELLED, OUT_OF_RANGE, DATA_LOSS) and a
 * missing status are retried, others drop the request.
 *
 * With a dump directory, each request body (uncompressed protobuf) is
 * also written there as agent-<unix ms>-<seq>.otlp.pb, for debugging
 * with `profd top` / `profd convert`.
 *
 * Thread-safety: submit and get_stats may be called from one thread
 * while the sender runs; new/close from that same thread.
 */
#ifndef PROF_AGENT_EXPORT_H
#define PROF_AGENT_EXPORT_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"

/**
 * struct agent_export_opts - @server_url: base URL ("http://host:4040",
 * or "grpc://host:4317" / "grpcs://..." for OTLP/gRPC),
 * or NULL to only dump; @dump_dir: directory for request dumps, or NULL;
 * @max_queue_bytes: cap on compressed bytes waiting to be sent, the
 * request being sent included (0 = 32 MiB): a new request makes room by
 * dropping the oldest waiting ones, and is dropped itself when it still
 * does not fit; @timeout_ms: per-request limit (0 = 10000); @max_backoff_ms:
 * longest wait between retries (0 = 30000); @bearer_token, @dataset:
 * header values or NULL (copied; must not contain CR or LF); @ca_file: a
 * PEM file of the CA certificates that sign an https:// or grpcs://
 * server's certificate, trusted instead of the system's store (libcurl
 * CURLOPT_CAINFO), or NULL (copied; must be readable at _new);
 * @cert_file, @key_file: the client certificate (PEM, then any
 * intermediates) and its key, for a server that asks for one (profd
 * server --tls-client-ca; CURLOPT_SSLCERT / CURLOPT_SSLKEY), or NULL; a
 * key without a certificate is -EINVAL, a certificate without a key
 * means the key is in the certificate's file (copied; readable at _new).
 */
struct agent_export_opts {
	const char *server_url;
	const char *dump_dir;
	size_t max_queue_bytes;
	long timeout_ms;
	long max_backoff_ms;
	const char *bearer_token;
	const char *dataset;
	const char *ca_file;
	const char *cert_file, *key_file;
};

/** struct agent_export_stats - totals since _new. */
struct agent_export_stats {
	uint64_t requests;	   /* requests queued */
	uint64_t sent;		   /* requests the server accepted (2xx) */
	uint64_t failures;	   /* failed attempts (each retry counts) */
	uint64_t dropped;	   /* requests given up (queue full, 4xx, close deadline) */
	uint64_t dropped_full;	   /* ... of which to make room in a full queue */
	uint64_t dropped_rejected; /* ... of which refused for good by the server (4xx) */
	uint64_t dropped_bytes;	   /* compressed bytes of dropped requests */
	uint64_t bytes_sent;	   /* compressed bytes accepted */
	uint64_t queued_bytes;	   /* compressed bytes waiting now */
	uint64_t queued;	   /* requests waiting now */
	uint64_t max_queue_bytes;  /* the cap */
	uint64_t dump_failures;	   /* dumps that could not be written */
};

struct agent_export;

/**
 * agent_export_new() - start the exporter (and its sender thread when a
 * server URL is given). Errors: -EINVAL (neither URL nor dump directory,
 * a URL that is not http:// or https://, a token or dataset with a line
 * break), -errno when the thread cannot start; @err says which.
 */
int agent_export_new(const struct agent_export_opts *opts, struct agent_export **out,
		     struct prof_err *err);

/**
 * agent_export_submit() - encode @n profiles as one request, dump it,
 * compress it and queue it for sending. The profiles are only read.
 * Returns 0, or a negative code when encoding or compressing failed
 * (logged; nothing queued). n == 0 does nothing.
 */
int agent_export_submit(struct agent_export *x, const struct model_profile *const *profiles,
			size_t n);

/** agent_export_get_stats() - consistent copy of the counters. */
void agent_export_get_stats(struct agent_export *x, struct agent_export_stats *st);

/**
 * agent_export_close() - send what is queued (each request tried once
 * more, within @drain_ms milliseconds in all; a transfer still running at
 * the deadline is aborted), stop the sender, free everything. NULL ok.
 */
void agent_export_close(struct agent_export *x, long drain_ms);

#endif
