/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo.h - the agent's debuginfo uploader: binaries whose frames the
 * agent exports, and whose GNU build ID the server lacks, are uploaded to
 * the server's debuginfo store (POST /api/v1/debuginfo/<build id>,
 * docs/api.md), so production hosts need not ship symbols anywhere else
 * and query-time symbolization (symbolize/symbolizer.h) finds them.
 *
 * Flow: the agent offers (build ID, path, pid) for every file-backed
 * mapping in the profiles it exports (agent_debuginfo_offer, cheap and
 * never blocking: a hash lookup and, for a new build ID, a slot in a
 * bounded queue). An uploader thread takes them in order:
 *   1. HEAD /api/v1/debuginfo/<id> once: 200 means the server has it
 *      (remembered; never asked again), 404 means upload. 401/403 (a
 *      token with the ingest but not the query permission) also uploads:
 *      the server answers "kept" for what it already has as good.
 *   2. The file to send, first readable one whose build ID matches:
 *      a separate debug file DEBUG_DIR/.build-id/<xx>/<rest>.debug under
 *      the process's root (/proc/PID/root, so containers' files are
 *      found), then on the host; else the mapped file itself under the
 *      process's root, then at the same path on the host.
 *   3. At most max_files_per_min uploads a minute (token bucket) and
 *      max_bytes_per_sec bytes a second (libcurl's send-speed cap); files
 *      larger than max_file_bytes are skipped (counted). The body is
 *      streamed from the file.
 * Outcomes per build ID: present (the server had it), uploaded, skipped
 * (no readable file with that build ID, too big, refused by the server
 * with a 4xx), or failed (transport error, 5xx: offered again after
 * AGENT_DI_RETRY_NS). Remembered for at most max_known build IDs; past
 * that, new ones are not taken (counted), so memory stays bounded.
 *
 * Thread-safety: offer and get_stats may be called from any thread;
 * new/close from one thread. Closing aborts a transfer in progress.
 */
#ifndef PROF_AGENT_DEBUGINFO_H
#define PROF_AGENT_DEBUGINFO_H

#include "base/compat.h"
#include "base/err.h"

#define AGENT_DI_RETRY_NS (300 * 1000000000LL) /* failed build IDs: offered again after 5 min */

/**
 * struct agent_debuginfo_opts - @server_url: base URL (http:// or
 * https://); @bearer_token, @dataset: header values or NULL (copied; no
 * CR/LF); @proc_root: "/proc" (NULL = "/proc"); @debug_dir: root of
 * separate debug files (NULL = "/usr/lib/debug"); @max_file_bytes: larger
 * files are not sent (0 = 1 GiB); @max_bytes_per_sec: upload speed cap
 * (0 = 4 MiB/s); @max_files_per_min: uploads a minute (0 = 30);
 * @max_queue: build IDs waiting (0 = 64); @max_known: build IDs
 * remembered (0 = 4096); @timeout_ms: HEAD limit, and the longest a POST
 * may make no progress (0 = 30000); @ca_file: CA certificates (PEM) for
 * an https:// server instead of the system's, or NULL; @cert_file,
 * @key_file: a client certificate and key (PEM) for a server that asks
 * for one, or NULL (as export.h's; all copied).
 */
struct agent_debuginfo_opts {
	const char *server_url;
	const char *bearer_token;
	const char *dataset;
	const char *proc_root;
	const char *debug_dir;
	uint64_t max_file_bytes;
	uint64_t max_bytes_per_sec;
	unsigned max_files_per_min;
	size_t max_queue;
	size_t max_known;
	long timeout_ms;
	const char *ca_file;
	const char *cert_file, *key_file;
};

/** struct agent_debuginfo_stats - totals since _new (gauges: queued). */
struct agent_debuginfo_stats {
	uint64_t offered;      /* new build IDs taken into the queue */
	uint64_t checks;       /* HEAD requests answered */
	uint64_t present;      /* build IDs the server already had */
	uint64_t uploads;      /* files the server accepted (201 stored/upgraded, 200 kept) */
	uint64_t upload_bytes; /* their bytes */
	uint64_t debug_files;  /* ... of the uploads, separate debug files */
	uint64_t failures;     /* transport errors and 5xx (HEAD or POST) */
	uint64_t rejected;     /* 4xx answers to an upload */
	uint64_t no_file;      /* no readable file with the build ID */
	uint64_t too_big;      /* files over max_file_bytes */
	uint64_t dropped_full; /* offers not taken: queue or memory bound full */
	uint64_t rate_limited; /* uploads that waited for the files-per-minute bucket */
	uint64_t queued;       /* build IDs waiting now */
};

struct agent_debuginfo;

/**
 * agent_debuginfo_new() - start the uploader thread. Errors: -EINVAL (no
 * URL, a URL that is not http(s)://, a header value with a line break),
 * -PROF_EUNSUPPORTED (libcurl missing), -errno (thread); @err says which.
 */
int agent_debuginfo_new(const struct agent_debuginfo_opts *opts, struct agent_debuginfo **out,
			struct prof_err *err);

/**
 * agent_debuginfo_offer() - consider the file at @path (as process @pid
 * sees it; must start with '/') with GNU build ID @build_id (lowercase
 * hex, 2..128 characters) for upload. Returns at once; ignores anything
 * already seen, malformed, or not fitting the bounds (counted).
 */
void agent_debuginfo_offer(struct agent_debuginfo *d, const char *build_id, const char *path,
			   uint32_t pid);

/** agent_debuginfo_get_stats() - consistent copy of the counters. NULL @d: zeros. */
void agent_debuginfo_get_stats(struct agent_debuginfo *d, struct agent_debuginfo_stats *st);

/**
 * agent_debuginfo_close() - stop the thread (a transfer in progress is
 * aborted; queued build IDs are dropped), free everything. NULL ok.
 */
void agent_debuginfo_close(struct agent_debuginfo *d);

#endif
