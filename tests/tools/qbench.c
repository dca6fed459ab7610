// SPDX-License-Identifier: Apache-2.0
/*
 * qbench.c - benchmark of the query views on agent-shaped data, in
 * process (the query engine, not HTTP):
 *
 *   qbench [--hours H] [--hosts 20] [--cpus 8] [--hz 19] [--procs-per-host 10]
 *          [--programs 20] [--stacks 2000] [--repeat 3] [--flush [--check] [--dir D]]
 *          [--small] [--only LABELS] [--ingest] [--storage URL] [--window 10]
 *
 * Data: a fleet of --hosts hosts x --cpus busy CPUs sampled at --hz, one
 * profile per process per --window seconds (10; a divisor of 3600)
 * (process_cpu:cpu:nanoseconds, each
 * sample its own row with its timestamp, value 1/hz s), --procs-per-host
 * processes per host; each runs one of --programs programs (process i
 * runs program i mod N), and a program has a pool of --stacks stacks 20-60
 * frames deep with heavy prefix sharing, picked with a skewed (cubic)
 * distribution; --programs equal to the number of processes makes every
 * process's stacks distinct (the worst case for the stack tree). Default
 * sizes give about 11 M samples per hour. The data lives in an in-memory
 * store (its head); with --flush the store is on disk (a temporary
 * directory) and each hour of data is flushed to a block, so queries read
 * compressed blocks. Profiles go to the head directly in both modes (not
 * through the write-ahead log, whose fsync per profile is not what is
 * measured here). --check verifies the flushed store (store_check_dir,
 * as `profd store check`) before the queries and stops on an error.
 * --dir D keeps the flushed store in D instead of a temporary directory,
 * and a later run with the same D and sizes queries it without generating
 * the data again (D must hold only what such a run wrote). --only LABELS
 * runs only the views of those labels, comma-separated, as printed (e.g.
 * "flamegraph all,series 60s by process all"). --ingest stores each
 * window's profiles with one store_ingest_profiles call (the
 * server's path: checks, the WAL and its fsync), so the generation time
 * is an ingest rate; --storage URL keeps the data in a ClickHouse store
 * (store/clickhouse.h, dataset "default"; implies --ingest, no flush),
 * to compare it with the embedded store on the same data.
 *
 * Then each view runs --repeat times through query_request_run over the
 * whole range, its first hour (when longer) and its first 5 minutes: flame graph, table (limit
 * 100), series (step 60 s, sum by process.executable.name), diff (first
 * half vs second half), the source view of pkg1.func1 (warm only: it
 * never uses the cache). Flame graph, table and diff run three ways: with
 * the translation cache warm (the steady state of a server: the first of
 * the runs fills it), cold (the cache emptied before each run), and
 * without it (a frame filter that hides nothing forces the per-query
 * translation, what every query paid before the cache). Prints one line
 * per view: median milliseconds, samples aggregated, samples per second,
 * answer bytes; and a JSON line at the end for scripts (with each answer's
 * FNV-1a hash, to compare answers of two builds). --small: 5 hosts
 * and 500 stacks per program, for quick iterations.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "model/profile.h"
#include "query/request.h"
#include "query/stackset.h"
#include "store/clickhouse.h"
#include "store/head.h"
#include "store/store.h"

#include <unistd.h>

#define T0_MS ((int64_t)1700000000000LL)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unit(void)
{
	return (double)(next() >> 11) / 9007199254740992.0;
}

struct proc {
	struct model_profile p;
	VEC(uint32_t) stack_off;
	VEC(uint32_t) stack_n;
};

/*
 * A process: its functions, one location each, and a pool of stacks. The
 * pool depends only on @program: processes running the same program (on
 * other hosts) have the same stacks, as a fleet does.
 */
static void proc_init(struct proc *pr, int host, int idx, int program, int nstacks)
{
	uint64_t saved = rng;

	rng = 0x2545f4914f6cdd1dULL * (uint64_t)(program + 1) | 1;
	struct model_profile *p = &pr->p;
	char name[64];
	uint32_t locs[64];
	enum { NFN = 400 };
	uint32_t fn_loc[NFN];

	model_profile_init(p);
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	p->period = 52631578;
	snprintf(name, sizeof(name), "proc-%d", idx);
	model_attr_add_str(p, "process.executable.name", name);
	snprintf(name, sizeof(name), "host-%d", host);
	model_attr_add_str(p, "host.name", name);
	model_attr_add_num(p, "process.pid", 1000 + host * 100 + idx);
	for (int f = 0; f < NFN; f++) {
		struct model_line ln = { 0 };

		snprintf(name, sizeof(name), "pkg%d.func%d", f % 23, f);
		ln.function = model_function_intern(p, model_intern(p, name), 0, 0, 0);
		fn_loc[f] = model_location_add(p, 0, 0x1000 + (uint64_t)f * 16, &ln, 1);
	}
	/* Stacks: a prefix of an earlier stack, extended to a depth in 20..60 (leaf first). */
	VEC(uint32_t) prev = { 0 }; /* root-first copy of the last stacks, 64 each */
	for (int s = 0; s < nstacks; s++) {
		uint32_t depth = 20 + (uint32_t)(next() % 41), keep = 0;
		uint32_t root_first[64];

		if (s) {
			uint32_t from = (uint32_t)(next() % (uint64_t)s);
			uint32_t *pf = prev.v + (size_t)from * 65;

			keep = (uint32_t)(next() % (pf[0] + 1));
			keep = PROF_MIN(keep, depth - 1);
			memcpy(root_first, pf + 1, keep * sizeof(uint32_t));
		} else {
			root_first[0] = fn_loc[0];
			keep = 1;
		}
		for (uint32_t d = keep; d < depth; d++)
			root_first[d] = fn_loc[next() % NFN];
		VEC_RESERVE(&prev, 65);
		prev.v[prev.n] = depth;
		memcpy(prev.v + prev.n + 1, root_first, depth * sizeof(uint32_t));
		prev.n += 65;
		for (uint32_t d = 0; d < depth; d++)
			locs[d] = root_first[depth - 1 - d];
		VEC_PUSH(&pr->stack_off, model_stack_add(p, locs, depth));
		VEC_PUSH(&pr->stack_n, depth);
	}
	VEC_FREE(&prev);
	rng = saved;
}

static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

struct args {
	const char *kv[32];
};

static const char *get_arg(void *ctx, const char *name)
{
	const struct args *a = ctx;

	for (size_t i = 0; a->kv[i]; i += 2)
		if (!strcmp(a->kv[i], name))
			return a->kv[i + 1];
	return NULL;
}

static void check_report(void *arg, enum store_check_level lvl, const char *path, int64_t offset,
			 const char *msg)
{
	(void)arg;
	if (lvl >= STORE_CHECK_WARNING)
		fprintf(stderr, "qbench: check: %s at %" PRId64 ": %s\n", path, offset, msg);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum cache_mode { WARM, COLD, NOCACHE };

static const char *only; /* --only: the labels of the views to run, comma-separated */

static bool selected(const char *label)
{
	size_t n = strlen(label);

	for (const char *p = only; p && *p;) {
		const char *e = strchr(p, ',');
		size_t k = e ? (size_t)(e - p) : strlen(p);

		if (k == n && !memcmp(p, label, n))
			return true;
		p = e ? e + 1 : p + k;
	}
	return !only;
}

static void run_view(struct store *st, const char *label, const char *view, struct args *a0,
		     int repeat, uint64_t samples, struct buf *json, enum cache_mode mode)
{
	struct args a1 = *a0, *a = &a1;
	char lbl[96];

	snprintf(lbl, sizeof(lbl), "%s%s", label,
		 mode == COLD	   ? " (cold)"
		 : mode == NOCACHE ? " (no cache)"
				   : "");
	label = lbl;
	if (!selected(label))
		return;
	if (mode == NOCACHE) {
		size_t k = 0;

		while (a->kv[k])
			k += 2;
		a->kv[k] = "frame_filter";
		a->kv[k + 1] = "^$"; /* hides nothing: names are never empty */
		a->kv[k + 2] = NULL;
	}
	struct query_env env = { st, NULL, T0_MS, NULL };
	double t[16], cpu[16];
	size_t bytes = 0;
	uint64_t hash = 0;
	struct buf out;
	struct prof_err err;
	const char *ct;

	buf_init(&out, 0);
	for (int r = 0; r < repeat; r++) {
		buf_reset(&out);
		prof_err_init(&err);
		if (mode == COLD)
			query_stackset_cache_clear();
		double s = now_ms(), c = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
		int rc = query_request_run(&env, view, get_arg, a, &out, &ct, &err);
		t[r] = now_ms() - s;
		cpu[r] = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c;
		if (rc) {
			fprintf(stderr, "qbench: %s: %s\n", label, err.msg);
			exit(1);
		}
		bytes = out.len;
		hash = UINT64_C(14695981039346656037); /* FNV-1a 64, to compare answers old/new */
		for (size_t i = 0; i < out.len; i++)
			hash = (hash ^ (uint8_t)out.p[i]) * UINT64_C(1099511628211);
	}
	qsort(t, (size_t)repeat, sizeof(double), cmp_double);
	qsort(cpu, (size_t)repeat, sizeof(double), cmp_double);
	double med = t[repeat / 2], cmed = cpu[repeat / 2];
	printf("%-40s %9.1f ms wall %9.1f ms cpu %11" PRIu64 " samples %7.1f M samples/s/core "
	       "%9zu bytes\n",
	       label, med, cmed, samples, (double)samples / cmed / 1e3, bytes);
	fflush(stdout);
	(void)buf_addf(json,
		       "%s{\"view\":\"%s\",\"wall_ms\":%.1f,\"cpu_ms\":%.1f,\"samples\":%" PRIu64
		       ",\"samples_per_s_per_core\":%.0f,\"bytes\":%zu,\"fnv64\":\"%016" PRIx64
		       "\"}",
		       json->len > 1 ? "," : "", label, med, cmed, samples,
		       (double)samples / cmed * 1e3, bytes, hash);
	buf_release(&out);
}

int main(int argc, char **argv)
{
	int64_t hours = 1, hosts = 20, cpus = 8, hz = 19, pph = 10, nstacks = 2000, repeat = 3;
	int64_t programs = 20, window = 10; /* seconds per profile */
	bool flush = false, check = false, ingest = false;
	const char *storage = NULL;
	char tmpdir[] = "/tmp/profd-qbench.XXXXXX";
	const char *dir = NULL;
	bool reuse = false;
	struct store *st = NULL;
	struct prof_err err;

	for (int i = 1; i < argc; i++) {
		int64_t *dst = NULL;

		if (!strcmp(argv[i], "--hours"))
			dst = &hours;
		else if (!strcmp(argv[i], "--hosts"))
			dst = &hosts;
		else if (!strcmp(argv[i], "--cpus"))
			dst = &cpus;
		else if (!strcmp(argv[i], "--hz"))
			dst = &hz;
		else if (!strcmp(argv[i], "--procs-per-host"))
			dst = &pph;
		else if (!strcmp(argv[i], "--stacks"))
			dst = &nstacks;
		else if (!strcmp(argv[i], "--programs"))
			dst = &programs;
		else if (!strcmp(argv[i], "--repeat"))
			dst = &repeat;
		else if (!strcmp(argv[i], "--window"))
			dst = &window;
		else if (!strcmp(argv[i], "--flush")) {
			flush = true;
			continue;
		} else if (!strcmp(argv[i], "--check")) {
			check = true;
			continue;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
			continue;
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
			flush = true;
			continue;
		} else if (!strcmp(argv[i], "--ingest")) {
			ingest = true;
			continue;
		} else if (!strcmp(argv[i], "--storage") && i + 1 < argc) {
			storage = argv[++i];
			ingest = true;
			continue;
		} else if (!strcmp(argv[i], "--small")) {
			hosts = 5;
			nstacks = 500;
			continue;
		}
		if (!dst || i + 1 >= argc || parse_i64(argv[++i], dst) || *dst < 1) {
			fprintf(stderr, "usage: qbench [--hours H] [--hosts N] [--cpus N] [--hz N] "
					"[--procs-per-host N] [--stacks N] [--repeat N] "
					"[--flush [--check] [--dir D]] [--small] [--only LABELS] "
					"[--ingest] [--storage URL] [--window S]\n");
			return 2;
		}
	}
	if (3600 % window) {
		fprintf(stderr, "qbench: --window must divide 3600 seconds\n");
		return 2;
	}
	repeat = PROF_MIN(repeat, 15);
	prof_err_init(&err);
	if (storage) {
		flush = false;
		if (store_open_clickhouse(storage, "default", NULL, &st, &err)) {
			fprintf(stderr, "qbench: %s\n", err.msg);
			return 1;
		}
	} else if (flush) {
		struct store_options o;

		if (!dir && !(dir = mkdtemp(tmpdir))) {
			perror("mkdtemp");
			return 1;
		}
		store_options_default(&o);
		o.background = false;
		if (store_open_opts(dir, &o, &st, &err)) {
			fprintf(stderr, "qbench: %s\n", err.msg);
			return 1;
		}
	} else if (store_open_mem(&st)) {
		fprintf(stderr, "qbench: cannot open a memory store\n");
		return 1;
	}

	size_t np = (size_t)(hosts * pph);
	struct proc *procs = xcalloc(np, sizeof(*procs));
	const struct model_profile **batch = xcalloc(np, sizeof(*batch));
	for (size_t i = 0; i < np; i++)
		proc_init(&procs[i], (int)(i / (size_t)pph), (int)(i % (size_t)pph),
			  (int)(i % (size_t)programs), (int)nstacks);
	int64_t per_window = hosts * cpus * hz * window / (int64_t)np; /* samples per process */
	int64_t windows = hours * 3600 / window, value = 1000000000LL / hz;
	uint64_t total = 0;
	double g0 = now_ms();

	if (flush) {
		struct store_stats ss;

		store_get_stats(st, &ss);
		reuse = ss.blocks > 0;
		if (reuse)
			windows = 0;
		total = reuse ? (uint64_t)(hours * 3600 / window * per_window) * np : 0;
	}
	for (int64_t w = 0; w < windows; w++) {
		int64_t ws = (T0_MS + w * window * 1000) * 1000000;

		for (size_t i = 0; i < np; i++) {
			struct proc *pr = &procs[i];

			pr->p.samples.n = 0;
			pr->p.values.n = 0;
			pr->p.time_ns = ws;
			for (int64_t k = 0; k < per_window; k++) {
				double u = unit();
				size_t s = (size_t)(u * u * u * (double)pr->stack_off.n);
				int64_t ts = ws + (int64_t)(unit() * (double)window * 1e9);

				model_sample_add(&pr->p, pr->stack_off.v[s], pr->stack_n.v[s],
						 &value, NULL, 0, ts, 0);
			}
			const struct model_profile *pp = &pr->p;
			/* Without --ingest straight into the active head: the log's
			 * encoding and fsync per profile would make the 24 h set take
			 * an hour, and the blocks a flush writes are the same. */
			int rc = ingest ? 0 : store_head_add(store_get_head(st), pp, ws, &err);
			if (rc) {
				fprintf(stderr, "qbench: ingest: %s\n", err.msg);
				return 1;
			}
			batch[i] = pp;
			total += (uint64_t)per_window;
		}
		if (ingest) {
			struct store_ingest_result res;

			if (store_ingest_profiles(st, batch, np, NULL, 0, &res, &err)) {
				fprintf(stderr, "qbench: ingest: %s\n", err.msg);
				return 1;
			}
		}
		if (flush && (w + 1) % (3600 / window) == 0 && store_flush(st, &err)) {
			fprintf(stderr, "qbench: flush: %s\n", err.msg);
			return 1;
		}
	}
	if (flush && !reuse && store_flush(st, &err)) {
		fprintf(stderr, "qbench: flush: %s\n", err.msg);
		return 1;
	}
	double gen = now_ms() - g0;
	if (flush && check) {
		struct store_check_result cr;

		if (store_check_dir(dir, check_report, NULL, &cr)) {
			fprintf(stderr, "qbench: store check failed: %" PRIu64 " errors\n",
				cr.errors);
			return 1;
		}
		printf("check: %" PRIu64 " blocks, %" PRIu64 " rows, no errors\n", cr.blocks,
		       cr.block_rows);
	}
	struct store_head_stats hs;
	store_head_get_stats(store_get_head(st), &hs);
	printf("data: %" PRId64 " h, %zu processes of %" PRId64 " programs, %" PRIu64
	       " samples (%" PRId64 " stacks per program, depth 20-60; %" PRIu64
	       " stack nodes in the head), %s; generated and stored in %.1f s (%.0f samples/s)\n",
	       hours, np, programs, total, nstacks, hs.stack_nodes,
	       storage	? "in ClickHouse"
	       : !flush ? "in memory"
	       : reuse	? "flushed to blocks on disk (kept from an earlier run)"
			: "flushed to blocks on disk",
	       gen / 1e3, (double)total / (gen / 1e3));
	fflush(stdout);

	char to[32], mid[32], five[32], hour[32];
	int64_t end_ms = T0_MS + hours * 3600 * 1000 - 1;
	snprintf(to, sizeof(to), "%" PRId64, end_ms);
	snprintf(mid, sizeof(mid), "%" PRId64, T0_MS + hours * 1800 * 1000);
	snprintf(five, sizeof(five), "%" PRId64, T0_MS + 300 * 1000 - 1);
	snprintf(hour, sizeof(hour), "%" PRId64, T0_MS + 3600 * 1000 - 1);
	const char *CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds", *from = "1700000000000";
	uint64_t five_samples = (uint64_t)(hosts * cpus * hz * 300);
	struct buf json;
	char label[64];

	buf_init(&json, 0);
	(void)buf_addstr(&json, "[");
	for (int r = 0; r < 3; r++) {
		if (r == 1 && hours < 2)
			continue; /* the first hour is all of it */
		const char *t = r == 2 ? five : r ? hour : to;
		const char *range = r == 2 ? "5 min" : r ? "1 h" : "all";
		uint64_t n = r == 2 ? five_samples : r ? five_samples * 12 : total;
		struct args fg = { { "type", CPU, "from", from, "to", t, NULL } };
		struct args tb = { { "type", CPU, "from", from, "to", t, "limit", "100", NULL } };
		struct args se = { { "type", CPU, "from", from, "to", t, "step", "60s", "group_by",
				     "process.executable.name", NULL } };
		struct args so = { { "type", CPU, "from", from, "to", t, "function", "pkg1.func1",
				     NULL } };
		struct args df = { { "type", CPU, "a_from", from, "a_to",
				     r == 2 ? "1700000149999"
				     : r    ? "1700001799999"
					    : mid,
				     "b_from",
				     r == 2 ? "1700000150000"
				     : r    ? "1700001800000"
					    : mid,
				     "b_to", t, NULL } };

		for (int m = WARM; m <= NOCACHE; m++) {
			snprintf(label, sizeof(label), "flamegraph %s", range);
			run_view(st, label, "flamegraph", &fg, (int)repeat, n, &json, m);
			snprintf(label, sizeof(label), "table %s", range);
			run_view(st, label, "table", &tb, (int)repeat, n, &json, m);
			if (m == WARM) {
				snprintf(label, sizeof(label), "series 60s by process %s", range);
				run_view(st, label, "series", &se, (int)repeat, n, &json, m);
				/* never cached (its frames are named by line): pair it with the table's */
				snprintf(label, sizeof(label), "source pkg1.func1 %s", range);
				run_view(st, label, "source", &so, (int)repeat, n, &json, m);
			}
			snprintf(label, sizeof(label), "diff halves %s", range);
			run_view(st, label, "diff", &df, (int)repeat, n, &json, m);
		}
	}
	(void)buf_addstr(&json, "]");
	printf("json: %s\n", json.p);
	buf_release(&json);
	for (size_t i = 0; i < np; i++) {
		model_profile_release(&procs[i].p);
		VEC_FREE(&procs[i].stack_off);
		VEC_FREE(&procs[i].stack_n);
	}
	free(procs);
	free(batch);
	store_close(st);
	if (flush && dir == tmpdir) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "qbench: could not remove %s\n", dir);
	}
	return 0;
}
