// SPDX-License-Identifier: Apache-2.0
/*
 * storecrash.c - test helper for the store's crash test
 * (tests/integration/test_store_crash.sh): a writer to kill -9 at random
 * points, and a verifier that every acknowledged sample is stored exactly
 * once.
 *
 *   storecrash run DIR FIRST   ingest requests FIRST, FIRST+1, ... forever,
 *                              flushing every 12 requests and compacting
 *                              after each flush (forced every 4th); prints "phase ingest ID",
 *                              "phase flush", "phase compact" before each
 *                              step and "ack ID" after each acknowledged
 *                              request (stdout, flushed)
 *   storecrash verify DIR ACKS open the store (which repairs what the crash
 *                              left), read every row back and check: each
 *                              acknowledged request's leaf "req_ID" totals
 *                              exactly value(ID) (not 0, not twice); an
 *                              unacknowledged one is absent or exact (it was
 *                              in flight); nothing else exists
 *
 * Request ID holds 1..6 samples, all on stacks ending in the frame
 * "req_ID", whose values sum to value(ID) = 1 + ID % 97; its timestamps
 * move forward one second per request so the compaction windows (300 s)
 * close as it runs.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "model/profile.h"
#include "store/store.h"

#include <unistd.h>

#define T0 (1700000000LL * 1000000000LL)

static int64_t value_of(uint64_t id)
{
	return 1 + (int64_t)(id % 97);
}

static void build(struct model_profile *p, uint64_t id)
{
	static const char *const mid[] = { "serve", "parse", "compute", "io", "gc" };
	int64_t total = value_of(id), left = total;
	int n = 1 + (int)(id % 6);
	char leaf[32], host[32];

	snprintf(host, sizeof(host), "host-%" PRIu64, id % 4);
	snprintf(leaf, sizeof(leaf), "req_%" PRIu64, id);
	model_profile_init(p);
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	model_attr_add_str(p, "host.name", host);
	for (int k = 0; k < n; k++) {
		const char *frames[4] = { "main", mid[(id + (uint64_t)k) % 5], mid[k % 5], leaf };
		uint32_t locs[4];
		int64_t v = k + 1 == n ? left : left / (n - k);

		if (v <= 0)
			continue;
		left -= v;
		for (int f = 0; f < 4; f++) {
			struct model_line ln = { 0 };

			ln.function = model_function_intern(p, model_intern(p, frames[f]), 0, 0, 0);
			locs[3 - f] = model_location_add(p, 0, 0, &ln, 1); /* leaf first */
		}
		uint32_t off = model_stack_add(p, locs, 4);
		model_sample_add(p, off, 4, &v, NULL, 0,
				 T0 + (int64_t)id * 1000000000LL + k * 1000000LL, 0);
	}
}

static struct store_options options(void)
{
	struct store_options o;

	store_options_default(&o);
	o.background = false;
	o.head_max_bytes = (uint64_t)1 << 40; /* flushes are the tool's, to mark them */
	o.block_duration_ns = 0;
	o.compact_window_ns = 300LL * 1000000000;
	o.compact_min_blocks = 3;
	return o;
}

static void phase(const char *what)
{
	printf("phase %s\n", what);
	fflush(stdout);
}

static int run(const char *dir, uint64_t first)
{
	struct store_options o = options();
	struct store *st = NULL;
	struct prof_err err;
	unsigned flushes = 0;

	prof_err_init(&err);
	if (store_open_opts(dir, &o, &st, &err)) {
		fprintf(stderr, "storecrash: open: %s\n", err.msg);
		return 1;
	}
	for (uint64_t id = first;; id++) {
		struct model_profile p;
		const struct model_profile *v[1] = { &p };

		build(&p, id);
		printf("phase ingest %" PRIu64 "\n", id);
		fflush(stdout);
		prof_err_init(&err);
		int rc = store_ingest_profiles(st, v, 1, NULL, 0, NULL, &err);
		model_profile_release(&p);
		if (rc) {
			fprintf(stderr, "storecrash: ingest %" PRIu64 ": %s\n", id, err.msg);
			return 1;
		}
		printf("ack %" PRIu64 "\n", id);
		fflush(stdout);
		if (id % 12 == 11) {
			phase("flush");
			if (store_flush(st, &err)) {
				fprintf(stderr, "storecrash: flush: %s\n", err.msg);
				return 1;
			}
			{
				uint32_t n;

				phase("compact");
				if (store_compact(st, ++flushes % 4 == 0, &n, &err)) {
					fprintf(stderr, "storecrash: compact: %s\n", err.msg);
					return 1;
				}
			}
		}
	}
}

/* --- verify ------------------------------------------------------------------------ */

struct totals {
	VEC(int64_t) by_id; /* id -> total */
	uint64_t foreign;   /* rows whose leaf is not req_N */
};

static int rows_cb(void *arg, const struct store_source *src, const struct store_series *s,
		   const struct store_row *rows, size_t n)
{
	struct totals *t = arg;

	(void)s;
	for (size_t i = 0; i < n; i++) {
		const struct store_stack_node *nd = &src->stacks[rows[i].stack];
		const struct model_location *l = &src->dict->locations.v[nd->loc];
		const char *name = "";
		uint64_t id;

		if (l->nlines)
			name = model_str(
				src->dict,
				src->dict->functions.v[src->dict->lines.v[l->line_off].function]
					.name);
		if (strncmp(name, "req_", 4) || parse_u64(name + 4, &id) || id > 100000000) {
			t->foreign++;
			continue;
		}
		while (t->by_id.n <= id)
			VEC_PUSH(&t->by_id, 0);
		t->by_id.v[id] += rows[i].value;
	}
	return 0;
}

static int verify(const char *dir, const char *acks)
{
	struct store_options o = options();
	struct store *st = NULL;
	struct prof_err err;
	struct totals t = { 0 };
	struct buf b;
	VEC(uint8_t) acked = { 0 };
	uint64_t nacked = 0, maxid = 0, inflight = 0, bad = 0;

	buf_init(&b, 0);
	if (buf_read_file(&b, acks)) {
		fprintf(stderr, "storecrash: cannot read %s\n", acks);
		return 1;
	}
	for (char *line = b.p; line && *line;) {
		char *nl = strchr(line, '\n');
		uint64_t id;

		if (nl)
			*nl = '\0';
		if (!strncmp(line, "ack ", 4) && !parse_u64(line + 4, &id)) {
			while (acked.n <= id)
				VEC_PUSH(&acked, 0);
			acked.v[id] = 1;
			nacked++;
			maxid = PROF_MAX(maxid, id);
		}
		line = nl ? nl + 1 : NULL;
	}
	buf_release(&b);
	prof_err_init(&err);
	if (store_open_opts(dir, &o, &st, &err)) {
		fprintf(stderr, "storecrash: open: %s\n", err.msg);
		return 1;
	}
	struct store_query q = { NULL, NULL, 0, INT64_MIN, INT64_MAX };
	struct store_visitor v = { .arg = &t, .rows = rows_cb };
	struct store_scan_stats ss;
	if (store_scan(st, &q, &v, &ss, &err) || ss.pages_corrupt || ss.blocks_failed) {
		fprintf(stderr,
			"storecrash: scan failed or met damage (%" PRIu64 " pages, %" PRIu64
			" blocks)\n",
			ss.pages_corrupt, ss.blocks_failed);
		bad++;
	}
	store_close(st);
	size_t n = PROF_MAX(t.by_id.n, acked.n);
	for (uint64_t id = 0; id < n; id++) {
		int64_t got = id < t.by_id.n ? t.by_id.v[id] : 0;
		bool ack = id < acked.n && acked.v[id];

		if (ack && got != value_of(id)) {
			fprintf(stderr,
				"storecrash: request %" PRIu64 " acknowledged, total %" PRId64
				" instead of %" PRId64 "%s\n",
				id, got, value_of(id),
				got == 2 * value_of(id) ? " (stored twice)" : "");
			bad++;
		} else if (!ack && got) {
			if (got != value_of(id)) {
				fprintf(stderr,
					"storecrash: request %" PRIu64 " (not acknowledged) "
					"total %" PRId64 " instead of 0 or %" PRId64 "\n",
					id, got, value_of(id));
				bad++;
			} else {
				inflight++;
			}
		}
	}
	if (t.foreign) {
		fprintf(stderr, "storecrash: %" PRIu64 " rows of unknown stacks\n", t.foreign);
		bad++;
	}
	printf("verify: %" PRIu64 " acknowledged requests exact, %" PRIu64
	       " in-flight present, up to id %" PRIu64 ": %s\n",
	       nacked, inflight, maxid, bad ? "FAIL" : "ok");
	VEC_FREE(&t.by_id);
	VEC_FREE(&acked);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t first;

	if (argc == 4 && !strcmp(argv[1], "run") && !parse_u64(argv[3], &first))
		return run(argv[2], first);
	if (argc == 4 && !strcmp(argv[1], "verify"))
		return verify(argv[2], argv[3]);
	fprintf(stderr, "usage: storecrash run DIR FIRST_ID | storecrash verify DIR ACKS\n");
	return 2;
}
