// SPDX-License-Identifier: Apache-2.0
/*
 * ingest.c - OTLP/HTTP profiles ingest, POST /v1development/profiles
 * (shared formats.md 1.2): protobuf body, Content-Encoding gzip or none.
 *
 * Success is 200 with an empty ExportProfilesServiceResponse, sent only
 * after the request is durable in the WAL (store_ingest_otlp returns after
 * fdatasync). Failures carry a google.rpc.Status (code, message) as the
 * spec asks of OTLP/HTTP servers; the message says what is wrong, e.g.
 * "sample 3: stack_index 9 out of range (4 stacks)":
 *   400 INVALID_ARGUMENT   undecodable or inconsistent data (never retried)
 *   413 RESOURCE_EXHAUSTED body or inflated body over the limit
 *   415                    not protobuf / unknown Content-Encoding
 *   503 UNAVAILABLE        the WAL could not be written (retryable)
 */
#include "base/compat.h"
#include "base/compress.h"
#include "base/log.h"
#include "server/route.h"

#include <strings.h>

/* gRPC status codes used in google.rpc.Status.code. */
enum { RPC_INVALID_ARGUMENT = 3, RPC_RESOURCE_EXHAUSTED = 8, RPC_UNAVAILABLE = 14 };

static void pb_varint(struct buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	(void)buf_add(b, tmp, n);
}

/* @status with a google.rpc.Status body: 1: int32 code, 2: string message. */
static void reply_status(struct server_reply *rp, unsigned status, int code, const char *fmt, ...)
	PROF_PRINTF(4, 5);
static void reply_status(struct server_reply *rp, unsigned status, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = strlen(msg);
	rp->status = status;
	snprintf(rp->reason, sizeof(rp->reason), "%s", msg);
	rp->content_type = "application/x-protobuf";
	buf_reset(&rp->body);
	pb_varint(&rp->body, 1 << 3 | 0);
	pb_varint(&rp->body, (uint64_t)code);
	pb_varint(&rp->body, 2 << 3 | 2);
	pb_varint(&rp->body, n);
	(void)buf_add(&rp->body, msg, n);
}

/* Media type of a Content-Type value, without parameters, compared case-insensitively. */
static bool media_is(const char *ctype, const char *want)
{
	size_t n = strcspn(ctype, ";");

	while (n && (ctype[n - 1] == ' ' || ctype[n - 1] == '\t'))
		n--;
	return n == strlen(want) && !strncasecmp(ctype, want, n);
}

void server_handle_otlp(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	const char *ctype = server_header(rq, "Content-Type");
	const char *enc = server_header(rq, "Content-Encoding");
	struct store_ingest_result res;
	struct prof_err err;
	struct buf inflated;
	const void *data = rq->body;
	size_t n = rq->body_len;
	int rc;

	if (ctype && !media_is(ctype, "application/x-protobuf") &&
	    !media_is(ctype, "application/protobuf") &&
	    !media_is(ctype, "application/octet-stream")) {
		if (media_is(ctype, "application/json"))
			server_reply_text(rp, 415,
					  "OTLP/JSON is not supported yet; send Content-Type: "
					  "application/x-protobuf");
		else
			server_reply_text(
				rp, 415,
				"unsupported Content-Type '%s'; send application/x-protobuf",
				ctype);
		return;
	}
	prof_err_init(&err);
	buf_init(&inflated, 0);
	if (enc && *enc && strcasecmp(enc, "identity")) {
		if (strcasecmp(enc, "gzip") && strcasecmp(enc, "x-gzip")) {
			server_reply_text(rp, 415,
					  "unsupported Content-Encoding '%s'; use gzip or none",
					  enc);
			return;
		}
		rc = gzip_inflate(rq->body ? rq->body : "", rq->body_len, srv->max_inflated,
				  &inflated, &err);
		if (rc == -PROF_ETOOBIG) {
			reply_status(rp, 413, RPC_RESOURCE_EXHAUSTED,
				     "gzip body inflates past the limit of %zu bytes (max "
				     "decompressed body size): %s",
				     srv->max_inflated, err.msg);
			goto out;
		}
		if (rc) {
			reply_status(rp, 400, RPC_INVALID_ARGUMENT,
				     "Content-Encoding is gzip but the body is not valid gzip: %s",
				     err.msg[0] ? err.msg : prof_strerror(rc));
			goto out;
		}
		data = inflated.p;
		n = inflated.len;
	}

	rc = store_ingest_otlp(srv->st, data ? data : "", n, srv->max_samples, &res, &err);
	if (!rc) {
		rp->status = 200;
		rp->content_type = "application/x-protobuf";
		/* An empty ExportProfilesServiceResponse: zero bytes. */
		log_debug("ingest otlp bytes=%zu profiles=%" PRIu64 " samples=%" PRIu64, n,
			  res.profiles, res.samples);
		goto out;
	}
	const char *msg = err.msg[0] ? err.msg : prof_strerror(rc);
	char at[48] = "";
	if (err.offset >= 0 && !strstr(msg, "byte"))
		snprintf(at, sizeof(at), " (at byte %" PRId64 ")", err.offset);
	switch (rc) {
	case -PROF_ETOOBIG:
		reply_status(rp, 413, RPC_RESOURCE_EXHAUSTED, "request too large: %s%s", msg, at);
		break;
	case -PROF_ECORRUPT:
	case -PROF_EFORMAT:
	case -PROF_EUNSUPPORTED:
	case -PROF_ENOTFOUND:
	case -EINVAL:
		reply_status(rp, 400, RPC_INVALID_ARGUMENT, "bad OTLP profiles request: %s%s", msg,
			     at);
		break;
	default:
		log_error("ingest: storing failed: %s", msg);
		reply_status(rp, 503, RPC_UNAVAILABLE, "storage unavailable: %s", msg);
		break;
	}
out:
	buf_release(&inflated);
}
