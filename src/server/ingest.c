// SPDX-License-Identifier: Apache-2.0
/*
 * ingest.c - OTLP/HTTP profiles ingest, POST /v1development/profiles
 * (docs/formats.md "OTLP transport", "OTLP/JSON"), on the main port and on the OTLP port
 * (--otlp-http-listen, :4318 by convention).
 *
 * Content-Type application/x-protobuf (also application/protobuf,
 * application/octet-stream, or none) takes the protobuf encoding,
 * application/json OTLP/JSON (format/otlp_json.h); Content-Encoding gzip
 * or none. The response uses the request's content type (the spec's
 * MUST): success is 200 with an ExportProfilesServiceResponse, sent only
 * after the request is durable in the dataset's WAL, with partial_success
 * (rejected_profiles, error_message) when signal control dropped part of
 * it; failures carry a google.rpc.Status (code, message), the message
 * saying what is wrong ("sample 3: stack_index 9 out of range (4 stacks)",
 * "limit max_series (10000) exceeded: ..."):
 *   400 INVALID_ARGUMENT   undecodable or inconsistent data, a label limit
 *   401/403                token missing or wrong / without the right
 *   413 RESOURCE_EXHAUSTED body, inflated body, ratio, samples or series over a limit
 *   415                    not protobuf or JSON / unknown Content-Encoding
 *   429, 503 UNAVAILABLE   overloaded / the WAL could not be written (Retry-After)
 *   507                    the disk is full
 */
#include "base/compat.h"
#include "base/log.h"
#include "server/pipeline.h"
#include "server/route.h"

#include <strings.h>

/* Media type of a Content-Type value, without parameters, compared case-insensitively. */
static bool media_is(const char *ctype, const char *want)
{
	size_t n = strcspn(ctype, ";");

	while (n && (ctype[n - 1] == ' ' || ctype[n - 1] == '\t'))
		n--;
	return n == strlen(want) && !strncasecmp(ctype, want, n);
}

static bool is_otlp_url(const char *url)
{
	return !strcmp(url, "/v1development/profiles");
}

static bool is_push_url(const char *url)
{
	return !strcmp(url, "/push.v1.PusherService/Push");
}

/*
 * A Connect unary reply (connectrpc.com/docs/protocol): success is the
 * empty PushResponse in the request's encoding; an error is JSON
 * {"code": "...", "message": "..."} with the HTTP status the protocol
 * gives that code.
 */
static void connect_reply(struct server_req *rq, struct server_reply *rp,
			  const struct server_ingest_out *out, bool json)
{
	static const struct {
		const char *code;
		unsigned http;
	} map[] = {
		[SERVER_OK] = { "", 200 },
		[SERVER_FAIL_BAD_INPUT] = { "invalid_argument", 400 },
		[SERVER_FAIL_UNAUTHORIZED] = { "unauthenticated", 401 },
		[SERVER_FAIL_FORBIDDEN] = { "permission_denied", 403 },
		[SERVER_FAIL_NOT_FOUND] = { "not_found", 404 },
		[SERVER_FAIL_TOO_LARGE] = { "resource_exhausted", 429 },
		[SERVER_FAIL_MEDIA_TYPE] = { "invalid_argument", 415 },
		[SERVER_FAIL_OVERLOADED] = { "unavailable", 503 },
		[SERVER_FAIL_UNAVAILABLE] = { "unavailable", 503 },
		[SERVER_FAIL_INSUFFICIENT] = { "resource_exhausted", 507 },
	};
	size_t f = (size_t)out->fail < PROF_ARRAY_SIZE(map) ? (size_t)out->fail : 0;

	(void)rq;
	if (out->fail == SERVER_OK) {
		rp->content_type = json ? "application/json" : "application/proto";
		if (json)
			(void)buf_addstr(&rp->body, "{}");
		return;
	}
	rp->status = map[f].http;
	rp->content_type = "application/json";
	(void)buf_addf(&rp->body, "{\"code\":\"%s\",\"message\":", map[f].code);
	(void)buf_add_json_str(&rp->body, out->msg, strlen(out->msg));
	(void)buf_addstr(&rp->body, "}");
}

static bool wants_json(struct server_req *rq)
{
	const char *ct = server_header(rq, "Content-Type");

	return ct && media_is(ct, "application/json");
}

void server_ingest_reply(struct server_req *rq, struct server_reply *rp,
			 const struct server_ingest_out *out)
{
	unsigned status = server_fail_http(out->fail);
	const char *text;

	buf_reset(&rp->body);
	rp->status = status;
	rp->cache = "no-store";
	if (out->fail == SERVER_FAIL_OVERLOADED || out->fail == SERVER_FAIL_UNAVAILABLE)
		rp->retry_after = rq->srv->limits.retry_after_s;
	if (out->fail == SERVER_FAIL_UNAUTHORIZED)
		rp->www_authenticate = "Bearer realm=\"profd\"";
	if (out->fail != SERVER_OK)
		snprintf(rp->reason, sizeof(rp->reason), "%s", out->msg);
	else if (out->partial[0])
		snprintf(rp->reason, sizeof(rp->reason), "partial: %s", out->partial);
	if (is_push_url(rq->url)) {
		connect_reply(rq, rp, out, wants_json(rq));
		return;
	}
	if (is_otlp_url(rq->url)) {
		bool json = wants_json(rq);

		rp->content_type = json ? "application/json" : "application/x-protobuf";
		if (out->fail == SERVER_OK)
			server_otlp_response(out, json, &rp->body);
		else
			server_rpc_status(server_fail_grpc(out->fail), out->msg, json, &rp->body);
		return;
	}
	/* Pyroscope's /ingest answers text (docs/formats.md "Pyroscope ingest"). */
	rp->content_type = "text/plain; charset=utf-8";
	text = out->fail != SERVER_OK ? out->msg : out->partial;
	if ((out->fail != SERVER_OK || text[0]) && !server_text_add(&rp->body, text, strlen(text)))
		(void)buf_add(&rp->body, "\n", 1); /* messages quote the request: any bytes */
	/* Stored, but a decoder left parts out: say what, on a line of its own. */
	text = out->skipped;
	if (out->fail == SERVER_OK && text[0] && !server_text_add(&rp->body, text, strlen(text)))
		(void)buf_add(&rp->body, "\n", 1);
}

void server_handle_otlp(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	const char *ctype = server_header(rq, "Content-Type");
	const char *enc = server_header(rq, "Content-Encoding");
	struct server_ingest_out out = { 0 };
	struct server_auth auth;
	struct buf inflated;
	const void *data = rq->body;
	size_t n = rq->body_len;
	bool json = false;

	buf_init(&inflated, 0);
	if (ctype && *ctype) {
		if (media_is(ctype, "application/json"))
			json = true;
		else if (!media_is(ctype, "application/x-protobuf") &&
			 !media_is(ctype, "application/protobuf") &&
			 !media_is(ctype, "application/octet-stream")) {
			server_ingest_fail(srv, &out, SERVER_FAIL_MEDIA_TYPE, "content_type",
					   "unsupported Content-Type '%.100s'; send "
					   "application/x-protobuf or application/json",
					   ctype);
			goto reply;
		}
	}
	if (!rq->auth) {
		server_req_auth(rq, SERVER_PERM_INGEST, &auth);
		rq->auth = &auth;
	}
	if (rq->auth->status) {
		server_ingest_fail(srv, &out,
				   rq->auth->status == 401   ? SERVER_FAIL_UNAUTHORIZED
				   : rq->auth->status == 403 ? SERVER_FAIL_FORBIDDEN
				   : rq->auth->status == 404 ? SERVER_FAIL_NOT_FOUND
							     : SERVER_FAIL_BAD_INPUT,
				   "auth", "%s", rq->auth->msg);
		goto reply;
	}
	if (enc && *enc && strcasecmp(enc, "identity")) {
		if (strcasecmp(enc, "gzip") && strcasecmp(enc, "x-gzip")) {
			server_ingest_fail(srv, &out, SERVER_FAIL_MEDIA_TYPE, "content_encoding",
					   "unsupported Content-Encoding '%.60s'; use gzip or none",
					   enc);
			goto reply;
		}
		if (!server_inflate(srv, &data, &n, true, &inflated,
				    "request body (Content-Encoding gzip)", &out))
			goto reply;
	}
	if (server_ingest_otlp(srv, rq->auth->ds, data, n, json, json ? "otlp-json" : "otlp",
			       &out)) {
		rq->samples = out.accepted;
		log_debug("ingest otlp dataset=%s bytes=%zu profiles=%" PRIu64 " samples=%" PRIu64
			  " dropped=%" PRIu64,
			  rq->auth->ds->name, n, out.profiles, out.accepted, out.dropped);
	}
reply:
	server_ingest_reply(rq, rp, &out);
	buf_release(&inflated);
}
