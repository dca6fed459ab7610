// SPDX-License-Identifier: Apache-2.0
/*
 * otlpdecode.c - benchmark helper: CPU time of the two OTLP decoders
 * (fmt_otlp_decode_direct and fmt_otlp_decode_pbc) on one request, in
 * model samples per CPU-second of the calling thread.
 *
 *   otlpdecode [--samples 200] [--stacks 50] [--depth 24] [--seconds 2]
 *              [--only direct|pbc|store] [--requests N] [FILE]
 *
 * Without FILE the request is ingestload's agent shape (one profile,
 * --samples samples of value 1 over --stacks stacks --depth frames deep,
 * 4 timestamps per stack); FILE is a raw ExportProfilesServiceRequest.
 * Each decoder runs for about --seconds of CPU. Prints one JSON object:
 * bytes, samples, direct_samples_per_cpu_s, pbc_samples_per_cpu_s,
 * direct_us_per_request, pbc_us_per_request, and store_us_per_request:
 * decoding as the store does (fmt_otlp_decode_pending) plus what it does
 * with the profiles before and after its WAL (model_profile_validate and
 * store_head_check_validated, for profiles sharing the dictionary checked
 * before only their samples; store_head_add_batch into one head that
 * lives across requests, as in the server; a fresh head every 2000 requests bounds the memory). Each figure is the best
 * of several rounds, which other load on the machine disturbs least.
 * --only runs one of the three (for a profiler); the others print as 0.
 * --requests N decodes exactly N requests per round instead (for
 * `perf stat -e instructions`, which other load does not disturb).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "model/profile.h"
#include "store/head.h"

#include <getopt.h>
#include <time.h>

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void build(unsigned samples, unsigned stacks, unsigned depth, struct buf *out)
{
	struct model_profile p;
	const struct model_profile *pp = &p;
	uint32_t locs[64];
	char name[64];
	int64_t now = 1700000000000000000;

	depth = depth > 64 ? 64 : depth;
	model_profile_init(&p);
	model_sample_type_add(&p, "samples", "count");
	p.period_type.type = model_intern(&p, "cpu");
	p.period_type.unit = model_intern(&p, "nanoseconds");
	p.period = 10000000;
	p.time_ns = now;
	for (unsigned s = 0; s < stacks; s++) {
		for (uint32_t d = 0; d < depth; d++) {
			struct model_line ln = { 0 };

			snprintf(name, sizeof(name), "fn_%u_%u", d, d < depth / 2 ? 0 : s);
			ln.function = model_function_intern(&p, model_intern(&p, name), 0, 0, 0);
			locs[depth - 1 - d] = model_location_add(&p, 0, 0, &ln, 1);
		}
		uint32_t st = model_stack_add(&p, locs, depth);

		for (unsigned i = s; i < samples; i += stacks) {
			int64_t one = 1;

			model_sample_add(&p, st, depth, &one, NULL, 0, now + i, 0);
		}
	}
	model_attr_add_str(&p, "service.name", "bench");
	PROF_ASSERT(fmt_otlp_encode(&pp, 1, out) == 0);
	model_profile_release(&p);
}

enum mode { DIRECT, PBC, STORE };

static unsigned long fixed_calls; /* --requests */

/* Decodes with @mode's decoder (STORE: direct, then into a head) ~@secs CPU seconds. */
static double round_(const struct buf *req, enum mode mode, double secs, size_t *samples)
{
	static struct store_head *h;
	static size_t added;
	double t0 = cpu_s(), t;
	size_t calls = 0;

	do {
		for (int k = 0; k < 20 && (!fixed_calls || calls < fixed_calls); k++) {
			struct fmt_otlp_batch b;
			int rc;

			if (mode == STORE) /* as the store decodes */
				rc = fmt_otlp_decode_pending(req->p, req->len, 0, &b, NULL);
			else if (mode == DIRECT)
				rc = fmt_otlp_decode_direct(req->p, req->len, 0, &b);
			else
				rc = fmt_otlp_decode_pbc(req->p, req->len, 0, &b, NULL);

			if (rc) {
				fprintf(stderr, "otlpdecode: %s decoder returned %d\n",
					mode != PBC ? "direct" : "protobuf-c", rc);
				exit(1);
			}
			*samples = 0;
			for (size_t i = 0; i < b.n; i++)
				*samples += b.profiles[i].samples.n;
			if (mode == STORE) {
				if (!h || added++ % 2000 == 1999) {
					store_head_free(h);
					h = store_head_new();
				}
				const struct model_profile **pp = xcalloc(b.n + 1, sizeof(*pp));

				for (size_t i = 0; i < b.n; i++) {
					const struct model_profile *p = &b.profiles[i];

					pp[i] = p;
					bool shared = i && model_profile_same_dict(p, pp[i - 1]);
					int crc = shared ? model_profile_validate_samples(p, NULL)
							 : model_profile_validate(p, NULL);

					if (!crc)
						crc = shared ? store_head_check_samples(p, NULL)
							     : store_head_check_validated(p, NULL);
					PROF_ASSERT(crc == 0);
				}
				store_head_add_batch(h, pp, b.n, 1);
				free(pp);
			}
			fmt_otlp_batch_release(&b);
			calls++;
		}
		t = cpu_s() - t0;
	} while (fixed_calls ? calls < fixed_calls : t < secs);
	return t / (double)calls;
}

/* The best of 5 rounds of @secs / 5 CPU seconds; returns s per call. */
static double run(const struct buf *req, enum mode mode, double secs, size_t *samples)
{
	double best = 0;

	for (int r = 0; r < 5; r++) {
		double t = round_(req, mode, secs / 5, samples);

		best = r == 0 || t < best ? t : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "samples", 1, 0, 's' },
					    { "stacks", 1, 0, 'k' },
					    { "depth", 1, 0, 'd' },
					    { "seconds", 1, 0, 't' },
					    { "only", 1, 0, 'o' },
					    { "requests", 1, 0, 'r' },
					    { 0, 0, 0, 0 } };
	unsigned samples = 200, stacks = 50, depth = 24;
	double secs = 2, td = 0, tp = 0, tst = 0;
	const char *only = NULL;
	struct buf req = BUF_INIT;
	size_t ns = 0;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			samples = (unsigned)atoi(optarg);
			break;
		case 'k':
			stacks = (unsigned)atoi(optarg);
			break;
		case 'd':
			depth = (unsigned)atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'o':
			only = optarg;
			break;
		case 'r': {
			uint64_t v;

			if (parse_u64(optarg, &v) || v == 0 || v > 100000000) {
				fprintf(stderr, "otlpdecode: --requests: expected a count\n");
				return 2;
			}
			fixed_calls = (unsigned long)v;
			break;
		}
		default:
			fprintf(stderr, "usage: otlpdecode [--samples N] [--stacks N] [--depth N] "
					"[--seconds S] [--only direct|pbc|store] [--requests N] "
					"[FILE]\n");
			return 2;
		}
	}
	buf_init(&req, 0);
	if (optind < argc) {
		if (buf_read_file(&req, argv[optind])) {
			fprintf(stderr, "otlpdecode: cannot read %s\n", argv[optind]);
			return 1;
		}
	} else {
		build(samples, stacks ? stacks : 1, depth ? depth : 1, &req);
	}
	if (!only || !strcmp(only, "direct"))
		td = run(&req, DIRECT, secs, &ns);
	if (!only || !strcmp(only, "pbc"))
		tp = run(&req, PBC, secs, &ns);
	if (!only || !strcmp(only, "store"))
		tst = run(&req, STORE, secs, &ns);
	printf("{\"bytes\":%zu,\"samples\":%zu,\"direct_samples_per_cpu_s\":%.0f,"
	       "\"pbc_samples_per_cpu_s\":%.0f,\"direct_us_per_request\":%.1f,"
	       "\"pbc_us_per_request\":%.1f,\"store_us_per_request\":%.1f}\n",
	       req.len, ns, td > 0 ? (double)ns / td : 0, tp > 0 ? (double)ns / tp : 0, td * 1e6,
	       tp * 1e6, tst * 1e6);
	buf_release(&req);
	return 0;
}
