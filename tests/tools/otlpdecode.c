// SPDX-License-Identifier: Apache-2.0
/*
 * otlpdecode.c - benchmark helper: CPU time of the two OTLP decoders
 * (fmt_otlp_decode_direct and fmt_otlp_decode_pbc) on one request, in
 * model samples per CPU-second of the calling thread.
 *
 *   otlpdecode [--samples 200] [--stacks 50] [--depth 24] [--seconds 2] [FILE]
 *
 * Without FILE the request is ingestload's agent shape (one profile,
 * --samples samples of value 1 over --stacks stacks --depth frames deep,
 * 4 timestamps per stack); FILE is a raw ExportProfilesServiceRequest.
 * Each decoder runs for about --seconds of CPU. Prints one JSON object:
 * bytes, samples, direct_samples_per_cpu_s, pbc_samples_per_cpu_s,
 * direct_us_per_request, pbc_us_per_request.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "model/profile.h"

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

/* Runs @direct or the protobuf-c decoder for ~@secs CPU seconds; returns s per call. */
static double run(const struct buf *req, bool direct, double secs, size_t *samples)
{
	double t0 = cpu_s(), t;
	size_t calls = 0;

	do {
		for (int k = 0; k < 20; k++) {
			struct fmt_otlp_batch b;
			int rc = direct ? fmt_otlp_decode_direct(req->p, req->len, 0, &b)
					: fmt_otlp_decode_pbc(req->p, req->len, 0, &b, NULL);

			if (rc) {
				fprintf(stderr, "otlpdecode: %s decoder returned %d\n",
					direct ? "direct" : "protobuf-c", rc);
				exit(1);
			}
			*samples = 0;
			for (size_t i = 0; i < b.n; i++)
				*samples += b.profiles[i].samples.n;
			fmt_otlp_batch_release(&b);
			calls++;
		}
		t = cpu_s() - t0;
	} while (t < secs);
	return t / (double)calls;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "samples", 1, 0, 's' },
					    { "stacks", 1, 0, 'k' },
					    { "depth", 1, 0, 'd' },
					    { "seconds", 1, 0, 't' },
					    { 0, 0, 0, 0 } };
	unsigned samples = 200, stacks = 50, depth = 24;
	double secs = 2, td, tp;
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
		default:
			fprintf(stderr, "usage: otlpdecode [--samples N] [--stacks N] [--depth N] "
					"[--seconds S] [FILE]\n");
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
	td = run(&req, true, secs, &ns);
	tp = run(&req, false, secs, &ns);
	printf("{\"bytes\":%zu,\"samples\":%zu,\"direct_samples_per_cpu_s\":%.0f,"
	       "\"pbc_samples_per_cpu_s\":%.0f,\"direct_us_per_request\":%.1f,"
	       "\"pbc_us_per_request\":%.1f}\n",
	       req.len, ns, (double)ns / td, (double)ns / tp, td * 1e6, tp * 1e6);
	buf_release(&req);
	return 0;
}
