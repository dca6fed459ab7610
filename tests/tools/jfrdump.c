// SPDX-License-Identifier: Apache-2.0
/*
 * jfrdump.c - test helper: decode a JFR recording with fmt_jfr_decode and
 * print what the corpus facts (shared corpus facts/<id>.json) describe, as
 * one JSON object, so tests/integration/test_jfr_corpus.sh can compare:
 *
 *   jfrdump [--event cpu|wall|alloc|lock] [--type JFR_EVENT_NAME]
 *           [--tlab-allocation-size] [--pprof OUT.pb.gz] [--repeat N] FILE
 *
 * --pprof also writes the profile as gzipped pprof (fmt_pprof_encode), so
 * a test can read it back with `go tool pprof`. --repeat N decodes N more
 * times and prints "decode: N runs, best B ms, mean M ms, IN input bytes
 * (D decoded)" to stderr (bench/bench_jfr.sh).
 *
 *   {"samples": N,                  number of samples (= events read)
 *    "types": ["samples/count", "cpu/nanoseconds"],
 *    "profile_types": ["process_cpu:samples:count:cpu:nanoseconds", ...],
 *    "totals": [T0, T1],           sum of each value column
 *    "no_stack": K,                samples with an empty stack
 *    "threads": M,                 distinct thread.id labels
 *    "first_ns": A, "last_ns": B,  sample timestamps (ns since the epoch)
 *    "max_depth": D,               deepest stack (without [truncated])
 *    "functions": F,               distinct leaf..root function names in stacks
 *    "self": [[name, samples, v0, v1], ...]}   per leaf function, by v1 desc
 *
 * On a decode error it prints "jfrdump: FILE: message" to stderr and exits 1.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/compress.h"
#include "format/jfr.h"
#include "format/pprof.h"
#include "model/profile.h"

struct self_row {
	uint32_t fn; /* function name string id */
	int64_t n, v0, v1;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct self_row *x = a, *y = b;

	if (x->v1 != y->v1)
		return x->v1 < y->v1 ? 1 : -1;
	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Decodes @in @n times; prints the best and mean wall time. */
static void bench(const struct buf *in, const struct fmt_jfr_opts *o, long n)
{
	double best = 1e300, sum = 0;
	size_t decoded = in->len;

	if (gzip_is(in->p, in->len)) {
		struct buf raw = BUF_INIT;

		if (gzip_inflate(in->p, in->len, (size_t)1 << 31, &raw, NULL) == 0)
			decoded = raw.len;
		buf_release(&raw);
	}
	for (long i = 0; i < n; i++) {
		struct model_profile p;
		struct prof_err err;
		double t0 = now_ms(), dt;

		model_profile_init(&p);
		prof_err_init(&err);
		if (fmt_jfr_decode(in->p, in->len, o, &p, &err) != 0) {
			fprintf(stderr, "jfrdump: %s\n", err.msg);
			exit(1);
		}
		model_profile_release(&p);
		dt = now_ms() - t0;
		best = PROF_MIN(best, dt);
		sum += dt;
	}
	fprintf(stderr,
		"decode: %ld runs, best %.3f ms, mean %.3f ms, %zu input bytes (%zu decoded)\n", n,
		best, sum / (double)n, in->len, decoded);
}

static void die(const char *msg)
{
	fprintf(stderr, "jfrdump: %s\n", msg);
	exit(2);
}

int main(int argc, char **argv)
{
	struct fmt_jfr_opts o = { FMT_JFR_CPU, NULL, false, 0 };
	struct model_profile p;
	struct prof_err err;
	struct buf in = BUF_INIT, out = BUF_INIT;
	const char *file = NULL, *pprof_out = NULL;
	long repeat = 0;
	struct self_row *rows;
	int64_t tot[2] = { 0, 0 }, first = INT64_MAX, last = 0;
	size_t nostack = 0, maxdepth = 0, nfuncs = 0;
	uint8_t *seen_fn, *seen_tid_key;
	size_t ntid = 0;
	VEC(int64_t) tids = { 0 };
	char tmp[256];
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--event") && i + 1 < argc) {
			if (fmt_jfr_event_parse(argv[++i], &o.event))
				die("--event wants cpu, wall, alloc or lock");
		} else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
			o.event_type = argv[++i];
		} else if (!strcmp(argv[i], "--pprof") && i + 1 < argc) {
			pprof_out = argv[++i];
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			uint64_t r;

			if (parse_u64(argv[++i], &r) || r == 0 || r > 1000000)
				die("--repeat wants a count from 1 to 1000000");
			repeat = (long)r;
		} else if (!strcmp(argv[i], "--tlab-allocation-size")) {
			o.tlab_allocation_size = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			die("usage: jfrdump [--event E] [--type NAME] [--tlab-allocation-size] [--pprof OUT] [--repeat N] FILE");
		} else {
			file = argv[i];
		}
	}
	if (!file)
		die("usage: jfrdump [--event E] [--type NAME] [--tlab-allocation-size] [--pprof OUT] [--repeat N] FILE");
	rc = buf_read_file(&in, file);
	if (rc) {
		fprintf(stderr, "jfrdump: %s: %s\n", file, prof_strerror(rc));
		return 1;
	}
	model_profile_init(&p);
	prof_err_init(&err);
	rc = fmt_jfr_decode(in.p, in.len, &o, &p, &err);
	if (rc) {
		fprintf(stderr, "jfrdump: %s: %s\n", file,
			err.msg[0] ? err.msg : prof_strerror(rc));
		model_profile_release(&p);
		buf_release(&in);
		return 1;
	}
	rc = model_profile_validate(&p, &err);
	if (rc) {
		fprintf(stderr, "jfrdump: %s: invalid model: %s\n", file, err.msg);
		return 1;
	}
	if (repeat)
		bench(&in, &o, repeat);
	if (pprof_out) {
		struct buf pb = BUF_INIT;

		if (fmt_pprof_encode(&p, true, &pb) || buf_write_file(pprof_out, pb.p, pb.len)) {
			fprintf(stderr, "jfrdump: cannot write %s\n", pprof_out);
			return 1;
		}
		buf_release(&pb);
	}
	rows = xcalloc(p.strings.n, sizeof(*rows));
	seen_fn = xcalloc(p.strings.n, 1);
	seen_tid_key = xcalloc(1, 1);
	free(seen_tid_key);
	for (size_t i = 0; i < p.samples.n; i++) {
		const struct model_sample *s = &p.samples.v[i];
		const int64_t *v = &p.values.v[s->value_off];
		size_t depth = s->nstack;

		tot[0] += v[0];
		tot[1] += v[1];
		if (s->timestamp_ns) {
			first = PROF_MIN(first, s->timestamp_ns);
			last = PROF_MAX(last, s->timestamp_ns);
		}
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const struct model_label *l = &p.labels.v[s->label_off + k];

			if (strcmp(model_str(&p, l->key), "thread.id") == 0) {
				size_t j;

				for (j = 0; j < tids.n && tids.v[j] != l->num; j++)
					;
				if (j == tids.n) {
					VEC_PUSH(&tids, l->num);
					ntid++;
				}
			}
		}
		if (s->nstack == 0) {
			nostack++;
			continue;
		}
		for (uint32_t k = 0; k < s->nstack; k++) {
			const struct model_location *loc =
				&p.locations.v[p.stack_locs.v[s->stack_off + k]];
			uint32_t fn = p.functions.v[p.lines.v[loc->line_off].function].name;

			if (k == s->nstack - 1 && strcmp(model_str(&p, fn), "[truncated]") == 0)
				depth--;
			if (!seen_fn[fn]) {
				seen_fn[fn] = 1;
				nfuncs++;
			}
		}
		maxdepth = PROF_MAX(maxdepth, depth);
		{
			const struct model_location *leaf =
				&p.locations.v[p.stack_locs.v[s->stack_off]];
			uint32_t fn = p.functions.v[p.lines.v[leaf->line_off].function].name;

			rows[fn].fn = fn;
			rows[fn].n++;
			rows[fn].v0 += v[0];
			rows[fn].v1 += v[1];
		}
	}
	qsort(rows, p.strings.n, sizeof(*rows), cmp_rows);
	buf_addf(&out, "{\"samples\": %zu, \"types\": [", p.samples.n);
	for (size_t i = 0; i < p.sample_types.n; i++)
		buf_addf(&out, "%s\"%s/%s\"", i ? ", " : "",
			 model_str(&p, p.sample_types.v[i].type),
			 model_str(&p, p.sample_types.v[i].unit));
	buf_addstr(&out, "], \"profile_types\": [");
	for (size_t i = 0; i < p.sample_types.n; i++) {
		model_profile_type_id(&p, (uint32_t)i, tmp, sizeof(tmp));
		buf_addf(&out, "%s\"%s\"", i ? ", " : "", tmp);
	}
	buf_addf(&out,
		 "], \"totals\": [%" PRId64 ", %" PRId64 "], \"no_stack\": %zu, \"threads\": %zu, "
		 "\"first_ns\": %" PRId64 ", \"last_ns\": %" PRId64 ", \"max_depth\": %zu, "
		 "\"functions\": %zu, \"period\": %" PRId64 ", \"time_ns\": %" PRId64
		 ", \"duration_ns\": %" PRId64 ", \"self\": [",
		 tot[0], tot[1], nostack, ntid, first == INT64_MAX ? 0 : first, last, maxdepth,
		 nfuncs, p.period, p.time_ns, p.duration_ns);
	for (size_t i = 0; i < p.strings.n && rows[i].n; i++) {
		const char *name = model_str(&p, rows[i].fn);

		buf_addstr(&out, i ? ", [" : "[");
		buf_add_json_str(&out, name, strlen(name));
		buf_addf(&out, ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", rows[i].n, rows[i].v0,
			 rows[i].v1);
	}
	buf_addstr(&out, "]}\n");
	fwrite(out.p, 1, out.len, stdout);
	free(rows);
	free(seen_fn);
	VEC_FREE(&tids);
	buf_release(&out);
	buf_release(&in);
	model_profile_release(&p);
	return 0;
}
