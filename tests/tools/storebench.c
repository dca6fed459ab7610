// SPDX-License-Identifier: Apache-2.0
/*
 * storebench.c - the store benchmark's generator and measurer
 * (bench/bench_store.sh): a simulated fleet sampled by eBPF agents,
 * ingested into a store directory as OTLP requests, then scanned.
 *
 *   storebench DIR [--hours H] [--small] [--senders N] [--baseline-min M] [--attrs|--links]
 *   storebench DIR --days D [--small]   D day blocks with rollups, then the D-day
 *                                        flame graph through the query API
 *
 * The fleet (issue 5's shape): 20 hosts x 8 busy CPUs sampled at 19 Hz,
 * 200 processes (10 per host, CPU shares uneven), 25 services (binaries)
 * with a few thousand distinct stacks each, depth 20..60, built as a tree
 * so stacks share long prefixes; frames are unsymbolized native frames
 * (binary mapping with build ID + address), a fifth of stacks end in a few
 * kernel frames (named, as the agent symbolizes those). Stacks are picked
 * Zipf-distributed (s = 1.1). Each CPU tick is one sample with its own
 * nanosecond timestamp (the CPU's phase plus up to 400 us of jitter); every 10 s each
 * host sends one OTLP request holding one profile per process (type
 * process_cpu:cpu:nanoseconds, value = the 1/19 s period). Simulated time
 * is fast-forwarded: requests go in as fast as the store takes them, from
 * N sender threads (group commit).
 *
 * With --attrs every sample also carries per-sample attributes as the
 * agent sends them: thread.name ("worker-<cpu>") and thread.id (the
 * process' thread on that CPU); --links adds, to the samples of every
 * fourth service (the traced ones), a link to a trace that changes every
 * second and a span that changes every 100 ms, per thread.
 *
 * It prints key=value lines: generation and ingest rates, the WAL and
 * block sizes, bytes per sample after flushes and after compaction, the
 * same samples as gzipped pprof per process per 10 s window (the naive
 * baseline: aggregated stacks, no timestamps) over the first M minutes,
 * and the rate of totals scans (flame graph aggregation) over 1 h and
 * 24 h ranges, single-threaded, from page-cached blocks.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "format/pprof.h"
#include "model/profile.h"
#include "query/request.h"
#include "store/block.h"
#include "store/store.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#define SEC	 1000000000LL
#define DAY	 (86400LL * SEC)
#define T0	 (19700LL * DAY) /* a midnight (UTC), so days are compaction windows */
#define WINDOW	 (10 * SEC)
#define NSERV	 25
#define NFUNC	 4000
#define NKFUNC	 300
#define MAXDEPTH 68

static int g_hosts = 20, g_cpus = 8, g_hz = 19, g_procs_per_host = 10;
static int g_stacks = 3000;
static bool g_attrs, g_links;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rndf(struct rng *r)
{
	return (double)(rnd(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* --- the fleet ------------------------------------------------------------------ */

struct frame {
	uint64_t addr; /* native: ELF vaddr; kernel: function index | 1 << 63 */
};

struct service {
	char path[64], build_id[48], name[32];
	uint64_t func[NFUNC];
	struct frame *frames; /* g_stacks stacks x MAXDEPTH, root first */
	uint8_t *depth;
	double *cdf; /* Zipf */
};

struct process {
	int host, service, pid;
	double share; /* cumulative CPU share within the host */
};

static struct service serv[NSERV];
static struct process *procs;
static char kname[NKFUNC][48];

static void build_fleet(void)
{
	struct rng r = { 12345 };

	for (int k = 0; k < NKFUNC; k++)
		snprintf(kname[k], sizeof(kname[k]), "k_%s_%d",
			 (const char *[]){ "sys", "vfs", "tcp", "sched", "mm", "irq" }[k % 6], k);
	for (int s = 0; s < NSERV; s++) {
		struct service *sv = &serv[s];
		uint64_t a = 0x401000;

		snprintf(sv->name, sizeof(sv->name), "svc-%02d", s);
		snprintf(sv->path, sizeof(sv->path), "/usr/bin/svc-%02d", s);
		for (int i = 0; i < 40; i++)
			sv->build_id[i] = "0123456789abcdef"[rnd(&r) & 15];
		for (int f = 0; f < NFUNC; f++) {
			a += 64 + rnd(&r) % 4000;
			sv->func[f] = a;
		}
		sv->frames = xcalloc((size_t)g_stacks * MAXDEPTH, sizeof(struct frame));
		sv->depth = xcalloc((size_t)g_stacks, 1);
		sv->cdf = xcalloc((size_t)g_stacks, sizeof(double));
		for (int i = 0; i < g_stacks; i++) {
			struct frame *f = sv->frames + (size_t)i * MAXDEPTH;
			int d = 20 + (int)(rnd(&r) % 41), keep = 0;

			if (i > 0) {
				/* Share a prefix with an earlier stack, the early ones most. */
				double u = rndf(&r);
				int p = (int)((double)i * u * u);
				const struct frame *pf = sv->frames + (size_t)p * MAXDEPTH;
				int pd = sv->depth[p] - (pf[sv->depth[p] - 1].addr >> 63 ? 6 : 0);

				keep = pd / 3 + (int)(rnd(&r) % (uint64_t)(pd - pd / 3));
				memcpy(f, pf, sizeof(*f) * (size_t)keep);
				d = PROF_MAX(d, keep + 1);
			}
			for (int j = keep; j < d; j++)
				f[j].addr = sv->func[rnd(&r) % NFUNC] + rnd(&r) % 200;
			if (rnd(&r) % 5 == 0) {
				/* syscall path: a few kernel frames at the leaf */
				int nk = 3 + (int)(rnd(&r) % 4);

				for (int j = 0; j < nk && d < MAXDEPTH; j++)
					f[d++].addr = (1ULL << 63) | (rnd(&r) % NKFUNC);
			}
			sv->depth[i] = (uint8_t)d;
		}
		double sum = 0;
		for (int i = 0; i < g_stacks; i++)
			sum += 1.0 / pow(i + 1, 1.1);
		double c = 0;
		for (int i = 0; i < g_stacks; i++) {
			c += 1.0 / pow(i + 1, 1.1) / sum;
			sv->cdf[i] = c;
		}
	}
	int np = g_hosts * g_procs_per_host;
	procs = xcalloc((size_t)np, sizeof(*procs));
	for (int h = 0; h < g_hosts; h++) {
		double w[64], tot = 0, c = 0;

		for (int k = 0; k < g_procs_per_host; k++) {
			w[k] = 0.2 + pow(rndf(&r), 3) * 5; /* a few busy processes per host */
			tot += w[k];
		}
		for (int k = 0; k < g_procs_per_host; k++) {
			struct process *p = &procs[h * g_procs_per_host + k];

			c += w[k] / tot;
			p->host = h;
			p->service = (int)((h * 7 + k * 3 + (int)(rnd(&r) % 3)) % NSERV);
			p->pid = 1000 + (int)(rnd(&r) % 60000);
			p->share = c;
		}
	}
}

static int pick_stack(const struct service *sv, double u)
{
	int lo = 0, hi = g_stacks - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (sv->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* --- one host's 10 s window as model profiles ------------------------------------------ */

struct sample {
	int proc, stack, cpu;
	int64_t ts;
};

struct locmap {
	uint64_t *key;
	uint32_t *val; /* + 1 */
	size_t cap;
};

static uint32_t locmap_get(struct locmap *m, uint64_t k)
{
	size_t i = (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 40) & (m->cap - 1);

	while (m->val[i] && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	return m->val[i] ? m->val[i] - 1 : UINT32_MAX;
}

static void locmap_put(struct locmap *m, uint64_t k, uint32_t v)
{
	size_t i = (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 40) & (m->cap - 1);

	while (m->val[i] && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	m->key[i] = k;
	m->val[i] = v + 1;
}

static void locmap_clear(struct locmap *m)
{
	memset(m->val, 0, sizeof(*m->val) * m->cap);
}

/* Samples of host @h in window @w (all CPUs), sorted by process. */
static size_t window_samples(int h, int64_t w, struct sample *out)
{
	struct rng r = { (uint64_t)h * 1000003 + (uint64_t)w * 7919 + 1 };
	int64_t period = SEC / g_hz, t0 = T0 + w * WINDOW;
	size_t n = 0;

	for (int c = 0; c < g_cpus; c++) {
		int64_t phase = (int64_t)((uint64_t)(h * 131 + c * 977) * 7919 % (uint64_t)period);

		for (int64_t t = t0 + phase; t < t0 + WINDOW; t += period) {
			double u = rndf(&r);
			int k = 0;

			while (k + 1 < g_procs_per_host &&
			       procs[h * g_procs_per_host + k].share < u)
				k++;
			struct process *p = &procs[h * g_procs_per_host + k];
			out[n].proc = h * g_procs_per_host + k;
			out[n].cpu = c;
			out[n].stack = pick_stack(&serv[p->service], rndf(&r));
			out[n].ts = t + (int64_t)(rnd(&r) % 400000); /* 0..400 us late */
			n++;
		}
	}
	return n;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc - y->proc;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* One process' samples as a profile; @pprof: aggregated counts + cpu, no timestamps. */
static void build_profile(struct model_profile *p, const struct sample *s, size_t n, int64_t w,
			  bool pprof, struct locmap *lm, uint32_t *stack_off)
{
	const struct process *pr = &procs[s[0].proc];
	const struct service *sv = &serv[pr->service];
	int64_t period = SEC / g_hz;
	char buf[32];
	uint32_t locs[MAXDEPTH];

	model_profile_init(p);
	if (pprof)
		model_sample_type_add(p, "samples", "count");
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	p->period = period;
	p->time_ns = T0 + w * WINDOW;
	p->duration_ns = WINDOW;
	if (!pprof) {
		model_attr_add_str(p, "service.name", sv->name);
		snprintf(buf, sizeof(buf), "host-%02d", pr->host);
		model_attr_add_str(p, "host.name", buf);
		model_attr_add_str(p, "process.executable.name", sv->name);
		model_attr_add_num(p, "process.pid", pr->pid);
	}
	struct model_mapping m = { 0 };
	m.memory_start = 0x400000;
	m.memory_limit = 0x400000 + 64 * 1024 * 1024;
	m.filename = model_intern(p, sv->path);
	m.build_id = model_intern(p, sv->build_id);
	uint32_t mapping = model_mapping_add(p, &m);
	uint32_t kernel = model_intern(p, "kernel");
	locmap_clear(lm);
	memset(stack_off, 0xff, sizeof(uint32_t) * (size_t)g_stacks);
	for (size_t i = 0; i < n; i++) {
		int st = s[i].stack;
		const struct frame *f = sv->frames + (size_t)st * MAXDEPTH;
		int d = sv->depth[st];

		if (stack_off[st] == UINT32_MAX) {
			for (int j = 0; j < d; j++) {
				uint32_t l = locmap_get(lm, f[j].addr);

				if (l == UINT32_MAX) {
					if (f[j].addr >> 63) {
						struct model_line ln = { 0 };
						uint64_t k = f[j].addr & 0xffff;

						ln.function = model_function_intern(
							p, model_intern(p, kname[k]), 0, 0, 0);
						l = model_location_add(p, 0, 0, &ln, 1);
						p->locations.v[l].frame_type = kernel;
					} else {
						l = model_location_add(p, mapping, f[j].addr, NULL,
								       0);
					}
					locmap_put(lm, f[j].addr, l);
				}
				locs[d - 1 - j] = l; /* leaf first */
			}
			stack_off[st] = model_stack_add(p, locs, (uint32_t)d);
		} else if (pprof) {
			/* aggregate: one sample per stack */
			continue;
		}
		if (pprof) {
			int64_t cnt = 0;

			for (size_t k = i; k < n; k++)
				cnt += s[k].stack == st;
			int64_t v[2] = { cnt, cnt * period };
			model_sample_add(p, stack_off[st], (uint32_t)d, v, NULL, 0, 0, 0);
		} else {
			int64_t v = period;
			struct model_label lb[2];
			uint32_t link = 0;

			memset(lb, 0, sizeof(lb));
			if (g_attrs) {
				snprintf(buf, sizeof(buf), "worker-%d", s[i].cpu);
				lb[0].key = model_intern(p, "thread.name");
				lb[0].str = model_intern(p, buf);
				lb[1].key = model_intern(p, "thread.id");
				lb[1].num = pr->pid * 16 + s[i].cpu;
				if (g_links && pr->service % 4 == 0) {
					struct model_link k;
					uint64_t tr =
						(uint64_t)s[i].proc * 1000003 +
						(uint64_t)s[i].cpu * 7919 +
						(uint64_t)(s[i].ts / SEC) * 0x9e3779b97f4a7c15ULL;
					uint64_t sp = tr ^ (uint64_t)(s[i].ts / (SEC / 10)) *
								   0xbf58476d1ce4e5b9ULL;

					memcpy(k.trace_id, &tr, 8);
					memcpy(k.trace_id + 8, &tr, 8);
					k.trace_id[15] ^= 0x5a;
					memcpy(k.span_id, &sp, 8);
					VEC_PUSH(&p->links, k);
					link = (uint32_t)p->links.n - 1;
				}
			}
			model_sample_add(p, stack_off[st], (uint32_t)d, &v, lb, g_attrs ? 2 : 0,
					 s[i].ts, link);
		}
	}
}

/* --- ingest ---------------------------------------------------------------------- */

struct sender {
	struct store *st;
	int id, nsenders;
	int64_t windows;
	uint64_t samples, requests, otlp_bytes;
	double gen_s, ingest_s;
	int rc;
};

static void *send_main(void *arg)
{
	struct sender *sd = arg;
	struct sample *smp = xcalloc((size_t)g_cpus * (size_t)(g_hz + 1) * 11, sizeof(*smp));
	struct locmap lm = { xcalloc(1 << 15, 8), xcalloc(1 << 15, 4), 1 << 15 };
	uint32_t *stack_off = xcalloc((size_t)g_stacks, sizeof(uint32_t));
	struct model_profile ps[64];
	const struct model_profile *pp[64];
	struct buf req;
	struct prof_err err;

	buf_init(&req, 0);
	for (int64_t w = 0; w < sd->windows && !sd->rc; w++) {
		for (int h = sd->id; h < g_hosts; h += sd->nsenders) {
			double t = now_s();
			size_t n = window_samples(h, w, smp), np = 0;

			qsort(smp, n, sizeof(*smp), cmp_sample);
			for (size_t i = 0; i < n;) {
				size_t j = i;

				while (j < n && smp[j].proc == smp[i].proc)
					j++;
				build_profile(&ps[np], smp + i, j - i, w, false, &lm, stack_off);
				pp[np] = &ps[np];
				np++;
				i = j;
			}
			buf_reset(&req);
			PROF_ASSERT(fmt_otlp_encode(pp, np, &req) == 0);
			for (size_t i = 0; i < np; i++)
				model_profile_release(&ps[i]);
			double t2 = now_s();
			prof_err_init(&err);
			sd->rc = store_ingest_otlp(sd->st, req.p, req.len, 0, NULL, &err);
			if (sd->rc) {
				fprintf(stderr, "storebench: ingest: %s\n", err.msg);
				break;
			}
			sd->ingest_s += now_s() - t2;
			sd->gen_s += t2 - t;
			sd->samples += n;
			sd->requests++;
			sd->otlp_bytes += req.len;
		}
	}
	buf_release(&req);
	free(lm.key);
	free(lm.val);
	free(stack_off);
	free(smp);
	return NULL;
}

/* --- bulk: hours of fleet data straight into blocks ------------------------------------ */

/*
 * What a flush writes, without the OTLP round trip and the WAL: one head
 * per hour filled with store_head_add (the same hash-consing as ingest),
 * then the block writer, as maint.c's flush uses them. Lets the benchmark
 * build a day of fleet data in minutes; the ingest path is measured on
 * its own.
 */
struct bulk {
	struct store_head *h;
	int id, nthreads;
	int64_t w0, w1;
	uint64_t samples;
};

static void *bulk_main(void *arg)
{
	struct bulk *bk = arg;
	struct sample *smp = xcalloc((size_t)g_cpus * (size_t)(g_hz + 1) * 11, sizeof(*smp));
	struct locmap lm = { xcalloc(1 << 15, 8), xcalloc(1 << 15, 4), 1 << 15 };
	uint32_t *stack_off = xcalloc((size_t)g_stacks, sizeof(uint32_t));
	struct prof_err err;

	for (int64_t w = bk->w0; w < bk->w1; w++) {
		for (int h = bk->id; h < g_hosts; h += bk->nthreads) {
			size_t n = window_samples(h, w, smp);

			qsort(smp, n, sizeof(*smp), cmp_sample);
			for (size_t i = 0; i < n;) {
				size_t j = i;
				struct model_profile p;

				while (j < n && smp[j].proc == smp[i].proc)
					j++;
				build_profile(&p, smp + i, j - i, w, false, &lm, stack_off);
				prof_err_init(&err);
				PROF_ASSERT(store_head_add(bk->h, &p, 0, &err) == 0);
				model_profile_release(&p);
				i = j;
			}
			bk->samples += n;
		}
	}
	free(lm.key);
	free(lm.val);
	free(stack_off);
	free(smp);
	return NULL;
}

struct ser_ref {
	const struct store_series *s;
	const struct store_row *rows;
};

static int cmp_ser(const void *a, const void *b)
{
	const struct store_series *x = ((const struct ser_ref *)a)->s,
				  *y = ((const struct ser_ref *)b)->s;

	return store_series_key_cmp(x->type, x->labels, x->nlabels, y->type, y->labels, y->nlabels);
}

static int cmp_row(const void *a, const void *b)
{
	const struct store_row *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void write_hour(const char *blocks, struct store_head *h, uint64_t id, bool rollup)
{
	/* rollup: what compaction writes (level 2, zstd 9, hour rollup RHRS) */
	struct store_block_write_opts o = { .zstd_level = rollup ? 9 : 3,
					    .ts_resolution_ns = 1000000,
					    .rollup = rollup };
	struct store_block_info info = { .level = rollup ? 2 : 1 };
	struct store_block_writer *w;
	struct prof_err err;
	size_t nn, ns = store_head_nseries(h);
	const struct store_stack_node *nodes = store_head_stacks(h, &nn);
	uint64_t *leaf = xcalloc(nn, sizeof(uint64_t));
	struct ser_ref *ser = xcalloc(ns, sizeof(*ser));

	for (size_t i = 0; i < ns; i++) {
		ser[i].s = store_head_series_at(h, i, &ser[i].rows);
		for (uint64_t r = 0; r < ser[i].s->nrows; r++)
			leaf[ser[i].rows[r].stack]++;
	}
	qsort(ser, ns, sizeof(*ser), cmp_ser);
	prof_err_init(&err);
	PROF_ASSERT(store_block_writer_new(blocks, id, &o, &w, &err) == 0);
	size_t nsets;
	const struct store_attr_set *sets = store_head_attrs(h, &nsets);
	PROF_ASSERT(store_block_writer_symbols(w, store_head_dict(h), nodes, nn, leaf, sets, nsets,
					       &err) == 0);
	for (size_t i = 0; i < ns; i++) {
		size_t n = ser[i].s->nrows;
		struct store_row *tmp = xmalloc(sizeof(*tmp) * n);

		memcpy(tmp, ser[i].rows, sizeof(*tmp) * n);
		qsort(tmp, n, sizeof(*tmp), cmp_row);
		PROF_ASSERT(store_block_writer_series(w, ser[i].s->type, ser[i].s->labels,
						      ser[i].s->nlabels, tmp, n, &err) == 0);
		free(tmp);
	}
	PROF_ASSERT(store_block_writer_finish(w, &info, &err) == 0);
	store_block_writer_free(w);
	free(ser);
	free(leaf);
}

/*
 * @hours hours as blocks of @span_h hours each under @dir/blocks (1: as
 * flushed; 24: day blocks with rollups, as compaction writes them);
 * returns the samples written.
 */
static uint64_t bulk(const char *dir, uint64_t hours, uint64_t span_h, int nthreads, double *gen_s,
		     double *write_s)
{
	char *blocks = xasprintf("%s/blocks", dir);
	uint64_t total = 0;

	mkdir(dir, 0755);
	mkdir(blocks, 0755);
	*gen_s = *write_s = 0;
	for (uint64_t hr = 0; hr < hours; hr += span_h) {
		struct bulk bk[16];
		pthread_t th[16];
		struct store_head *h = store_head_new();
		double t = now_s();

		for (int i = 0; i < nthreads; i++) {
			bk[i] = (struct bulk){
				h, i, nthreads, (int64_t)hr * 360, (int64_t)(hr + span_h) * 360, 0
			};
			PROF_ASSERT(pthread_create(&th[i], NULL, bulk_main, &bk[i]) == 0);
		}
		for (int i = 0; i < nthreads; i++) {
			pthread_join(th[i], NULL);
			total += bk[i].samples;
		}
		double t2 = now_s();
		*gen_s += t2 - t;
		write_hour(blocks, h, ((uint64_t)(T0 / 1000000) << 16) + hr, span_h > 1);
		*write_s += now_s() - t2;
		store_head_free(h);
		fprintf(stderr, "storebench: hour %" PRIu64 " written (%.1fs)\n", hr, now_s() - t);
	}
	free(blocks);
	return total;
}

/* The naive baseline: gzipped pprof per process per 10 s window. */
static void baseline(int64_t windows, uint64_t *bytes, uint64_t *samples)
{
	struct sample *smp = xcalloc((size_t)g_cpus * (size_t)(g_hz + 1) * 11, sizeof(*smp));
	struct locmap lm = { xcalloc(1 << 15, 8), xcalloc(1 << 15, 4), 1 << 15 };
	uint32_t *stack_off = xcalloc((size_t)g_stacks, sizeof(uint32_t));
	struct buf out;

	buf_init(&out, 0);
	*bytes = *samples = 0;
	for (int64_t w = 0; w < windows; w++) {
		for (int h = 0; h < g_hosts; h++) {
			size_t n = window_samples(h, w, smp);

			qsort(smp, n, sizeof(*smp), cmp_sample);
			for (size_t i = 0; i < n;) {
				size_t j = i;
				struct model_profile p;

				while (j < n && smp[j].proc == smp[i].proc)
					j++;
				build_profile(&p, smp + i, j - i, w, true, &lm, stack_off);
				buf_reset(&out);
				PROF_ASSERT(fmt_pprof_encode(&p, true, &out) == 0);
				*bytes += out.len;
				model_profile_release(&p);
				i = j;
			}
			*samples += n;
		}
	}
	buf_release(&out);
	free(lm.key);
	free(lm.val);
	free(stack_off);
	free(smp);
}

/* --- scans --------------------------------------------------------------------------- */

struct agg {
	uint64_t sources, stacks;
	int64_t total;
};

static int on_totals(void *arg, const struct store_source *src, const struct store_stack_total *t,
		     size_t n, uint64_t nrows)
{
	struct agg *a = arg;

	(void)src;
	(void)nrows;
	a->sources++;
	a->stacks += n;
	for (size_t i = 0; i < n; i++)
		a->total += t[i].total;
	return 0;
}

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * Wall time and this thread's CPU time: on a machine shared with other
 * work the wall clock measures the scheduler; CPU seconds measure the
 * scan (page-cache reads are charged to it as system time).
 */
static void scan_m(struct store *st, const char *name, int64_t from, int64_t to, int repeat,
		   const struct store_matcher *m)
{
	struct store_query q = { "process_cpu:cpu:nanoseconds:cpu:nanoseconds", m, m ? 1 : 0, from,
				 to };
	struct store_visitor v = { .totals = on_totals };
	struct store_scan_stats ss;
	struct prof_err err;
	double best = 1e30, first = 0, best_cpu = 1e30, first_cpu = 0;

	for (int i = 0; i < repeat; i++) {
		struct agg a = { 0 };
		double t = now_s(), c = cpu_s();

		v.arg = &a;
		prof_err_init(&err);
		PROF_ASSERT(store_scan(st, &q, &v, &ss, &err) == 0);
		t = now_s() - t;
		c = cpu_s() - c;
		if (i == 0) {
			first = t;
			first_cpu = c;
		}
		best = PROF_MIN(best, t);
		best_cpu = PROF_MIN(best_cpu, c);
	}
	printf("scan_%s_rollup_buckets=%" PRIu64 "\n", name, ss.rollup_buckets);
	printf("scan_%s_rows=%" PRIu64 "\nscan_%s_blocks=%" PRIu64 "\nscan_%s_pages=%" PRIu64
	       "\nscan_%s_first_s=%.4f\nscan_%s_best_s=%.4f\nscan_%s_rows_per_s=%.0f"
	       "\nscan_%s_first_cpu_s=%.4f\nscan_%s_best_cpu_s=%.4f\nscan_%s_rows_per_cpu_s=%.0f\n",
	       name, ss.rows, name, ss.blocks, name, ss.pages, name, first, name, best, name,
	       (double)ss.rows / best, name, first_cpu, name, best_cpu, name,
	       (double)ss.rows / best_cpu);
	fflush(stdout);
}

static void scan(struct store *st, const char *name, int64_t from, int64_t to, int repeat)
{
	scan_m(st, name, from, to, repeat, NULL);
}

/* With --attrs: a per-sample matcher ({thread.name="worker-3"}), decided per row. */
static void scan_thread(struct store *st, const char *name, int64_t from, int64_t to, int repeat)
{
	struct store_matcher m;
	struct prof_err err;

	prof_err_init(&err);
	PROF_ASSERT(store_matcher_init(&m, "thread.name", STORE_MATCH_EQ, "worker-3", &err) == 0);
	scan_m(st, name, from, to, repeat, &m);
	store_matcher_release(&m);
}

/* Stored bytes of chunk @id in the samples files of the blocks of @dir. */
static uint64_t chunk_bytes(const char *dir, const char *id)
{
	char *bd = xasprintf("%s/blocks", dir);
	DIR *d = opendir(bd);
	struct dirent *de;
	uint64_t sum = 0;

	while (d && (de = readdir(d))) {
		struct store_chunkfile f;
		struct prof_err err;
		char *p = xasprintf("%s/%s/samples", bd, de->d_name);

		prof_err_init(&err);
		if (de->d_name[0] != '.' &&
		    !store_chunkfile_open(&f, p, STORE_BLOCK_MAGIC_SAMPLES, STORE_BLOCK_VERSION,
					  false, &err)) {
			const struct store_chunkfile_entry *e = store_chunkfile_find(&f, id);

			sum += e ? e->stored_len : 0;
			store_chunkfile_close(&f);
		}
		free(p);
	}
	if (d)
		closedir(d);
	free(bd);
	return sum;
}

/* --- days: the 30-day flame graph ---------------------------------------------------- */

struct fg_args {
	char from[32], to[32];
};

static const char *fg_arg(void *ctx, const char *name)
{
	struct fg_args *a = ctx;

	if (!strcmp(name, "type"))
		return "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
	if (!strcmp(name, "from"))
		return a->from;
	if (!strcmp(name, "to"))
		return a->to;
	return NULL;
}

/*
 * @days day blocks with rollups (what compaction writes), then the flame
 * graph of all of them through the query API (query_request_run, as
 * GET /api/v1/flamegraph answers it): first call (symbols loaded) and the
 * best of 3, wall clock, and the totals scan under it.
 */
static int days_mode(const char *dir, uint64_t days)
{
	struct store_options o;
	struct store *st;
	struct prof_err err;
	double gen_s, write_s, t = now_s();

	build_fleet();
	uint64_t samples = bulk(dir, days * 24, 24, 2, &gen_s, &write_s);
	printf("days=%" PRIu64 "\ndays_hosts=%d\ndays_cpus=%d\ndays_samples=%" PRIu64
	       "\ndays_build_s=%.1f\n",
	       days, g_hosts, g_cpus, samples, now_s() - t);
	store_options_default(&o);
	o.background = false;
	prof_err_init(&err);
	PROF_ASSERT(store_open_opts(dir, &o, &st, &err) == 0);
	struct store_stats ss;
	store_get_stats(st, &ss);
	printf("days_blocks=%" PRIu64 "\ndays_block_bytes=%" PRIu64
	       "\ndays_bytes_per_sample=%.3f\n",
	       ss.blocks, ss.block_bytes, (double)ss.block_bytes / (double)ss.block_rows);
	printf("days_rollup_bytes=%" PRIu64 "\n", chunk_bytes(dir, "RHRS"));
	int64_t end = T0 + (int64_t)days * DAY - 1;
	scan(st, "days", T0, end, 3);
	{
		struct store_query q = { "process_cpu:cpu:nanoseconds:cpu:nanoseconds", NULL, 0, T0,
					 end };
		struct store_visitor v = { .totals = on_totals };
		struct store_scan_stats sst;
		struct agg a = { 0 };

		v.arg = &a;
		PROF_ASSERT(store_scan(st, &q, &v, &sst, &err) == 0);
		printf("days_rollup_series=%" PRIu64 "\ndays_series=%" PRIu64 "\n",
		       sst.rollup_series, sst.series);
	}
	struct query_env env = { .store = st, .sym = NULL, .now_ms = 0 };
	struct fg_args a;
	snprintf(a.from, sizeof(a.from), "%lld", (long long)(T0 / 1000000));
	snprintf(a.to, sizeof(a.to), "%lld", (long long)(end / 1000000));
	double first = 0, best = 1e30;
	size_t bytes = 0;
	for (int i = 0; i < 4; i++) {
		struct buf out = BUF_INIT;
		const char *ct;
		double t0 = now_s();

		prof_err_init(&err);
		if (query_request_run(&env, "flamegraph", fg_arg, &a, &out, &ct, &err)) {
			fprintf(stderr, "storebench: flamegraph: %s\n", err.msg);
			return 1;
		}
		double el = now_s() - t0;
		if (i == 0)
			first = el;
		else
			best = PROF_MIN(best, el);
		bytes = out.len;
		buf_release(&out);
	}
	printf("days_flamegraph_first_s=%.3f\ndays_flamegraph_best_s=%.3f\ndays_flamegraph_bytes=%zu\n",
	       first, best, bytes);
	store_close(st);
	return 0;
}

static uint64_t rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)ru.ru_maxrss / 1024;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	uint64_t hours = 6, senders = 4, base_min = 10, ingest_min = 20, days = 0;
	bool scan_only = false;
	struct store_options o;
	struct store *st = NULL;
	struct prof_err err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hours") && i + 1 < argc) {
			PROF_ASSERT(!parse_u64(argv[++i], &hours) && hours >= 1);
		} else if (!strcmp(argv[i], "--senders") && i + 1 < argc) {
			PROF_ASSERT(!parse_u64(argv[++i], &senders) && senders >= 1 &&
				    senders <= 64);
		} else if (!strcmp(argv[i], "--baseline-min") && i + 1 < argc) {
			PROF_ASSERT(!parse_u64(argv[++i], &base_min));
		} else if (!strcmp(argv[i], "--ingest-min") && i + 1 < argc) {
			PROF_ASSERT(!parse_u64(argv[++i], &ingest_min));
		} else if (!strcmp(argv[i], "--days") && i + 1 < argc) {
			PROF_ASSERT(!parse_u64(argv[++i], &days) && days >= 1 && days <= 400);
		} else if (!strcmp(argv[i], "--attrs")) {
			g_attrs = true;
		} else if (!strcmp(argv[i], "--links")) {
			g_attrs = g_links = true;
		} else if (!strcmp(argv[i], "--scan-only")) {
			scan_only = true;
		} else if (!strcmp(argv[i], "--small")) {
			/* CI size: 2 hosts, 1 h */
			g_hosts = 2;
			hours = 1;
			base_min = 5;
			ingest_min = 5;
		} else if (argv[i][0] != '-' && !dir) {
			dir = argv[i];
		} else {
			fprintf(stderr,
				"usage: storebench DIR [--hours H] [--small] [--senders N] "
				"[--ingest-min M] [--baseline-min M] [--scan-only] [--attrs|--links]\n");
			return 2;
		}
	}
	if (!dir) {
		fprintf(stderr, "storebench: DIR is required\n");
		return 2;
	}
	if (days) {
		/* --days with --small: one host with one CPU (30 days: 49 M samples) */
		if (g_hosts == 2) {
			g_hosts = 1;
			g_cpus = 1;
		}
		return days_mode(dir, days);
	}
	if (scan_only) {
		/* Measure the scans of an existing directory (for profiling). */
		store_options_default(&o);
		o.background = false;
		prof_err_init(&err);
		PROF_ASSERT(store_open_opts(dir, &o, &st, &err) == 0);
		scan(st, "1h", T0 + (int64_t)(hours / 2) * 3600 * SEC,
		     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1, 20);
		scan(st, "1h_offset", T0 + (int64_t)(hours / 2) * 3600 * SEC - 1800 * SEC,
		     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1800 * SEC - 1, 20);
		scan(st, "90m", T0 + (int64_t)(hours / 2) * 3600 * SEC - 1800 * SEC,
		     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1, 20);
		scan(st, "24h", T0, T0 + DAY - 1, 10);
		if (g_attrs)
			scan_thread(st, "24h_thread", T0, T0 + DAY - 1, 10);
		store_close(st);
		return 0;
	}
	double t = now_s();
	build_fleet();
	printf("fleet_hosts=%d\nfleet_cpus=%d\nfleet_hz=%d\nfleet_processes=%d\nfleet_services=%d\n"
	       "fleet_stacks_per_service=%d\nhours=%" PRIu64 "\nbuild_s=%.2f\n",
	       g_hosts, g_cpus, g_hz, g_hosts * g_procs_per_host, NSERV, g_stacks, hours,
	       now_s() - t);
	fflush(stdout);

	/* 1. Ingest through the server's path: OTLP request -> decode -> WAL
	 * (fdatasync, group commit) -> head, with flushes in the background. */
	char *idir = xasprintf("%s/ingest", dir);
	mkdir(dir, 0755);
	store_options_default(&o);
	o.background = true;
	o.maint_interval_ns = SEC / 2;
	prof_err_init(&err);
	if (ingest_min) {
		if (store_open_opts(idir, &o, &st, &err)) {
			fprintf(stderr, "storebench: %s\n", err.msg);
			return 1;
		}
		int64_t windows = (int64_t)ingest_min * 6;
		struct sender sd[64];
		pthread_t th[64];
		t = now_s();
		for (uint64_t i = 0; i < senders; i++) {
			sd[i] = (struct sender){
				.st = st, .id = (int)i, .nsenders = (int)senders, .windows = windows
			};
			PROF_ASSERT(pthread_create(&th[i], NULL, send_main, &sd[i]) == 0);
		}
		uint64_t samples = 0, requests = 0, otlp = 0;
		double gen = 0, ing = 0;
		int rc = 0;
		for (uint64_t i = 0; i < senders; i++) {
			pthread_join(th[i], NULL);
			samples += sd[i].samples;
			requests += sd[i].requests;
			otlp += sd[i].otlp_bytes;
			gen += sd[i].gen_s;
			ing += sd[i].ingest_s;
			rc |= sd[i].rc;
		}
		double wall = now_s() - t;
		if (rc)
			return 1;
		struct store_stats ss;
		store_get_stats(st, &ss);
		printf("ingest_minutes=%" PRIu64 "\ningest_samples=%" PRIu64
		       "\ningest_requests=%" PRIu64
		       "\notlp_bytes_per_sample=%.2f\ningest_wall_s=%.2f\nsenders=%" PRIu64
		       "\ngen_s=%.2f\ningest_call_s=%.2f\ningest_samples_per_s_wall=%.0f"
		       "\ningest_samples_per_s_per_call=%.0f\nwal_syncs=%" PRIu64
		       "\nwal_appends=%" PRIu64 "\n",
		       ingest_min, samples, requests, (double)otlp / (double)samples, wall, senders,
		       gen, ing, (double)samples / wall, (double)samples / (ing / (double)senders),
		       ss.wal.syncs, ss.wal.appended);
		fflush(stdout);
		store_close(st);
	}

	/* 2. H hours straight into hourly blocks (what flushes write). */
	double gen_s, write_s;
	uint64_t samples = bulk(dir, hours, 1, 2, &gen_s, &write_s);
	printf("samples=%" PRIu64 "\nbulk_head_add_s=%.2f\nbulk_block_write_s=%.2f\n"
	       "flush_write_samples_per_s=%.0f\n",
	       samples, gen_s, write_s, (double)samples / write_s);
	o.background = false;
	PROF_ASSERT(store_open_opts(dir, &o, &st, &err) == 0);
	struct store_stats ss;
	store_get_stats(st, &ss);
	printf("hourly_blocks=%" PRIu64 "\nhourly_block_bytes=%" PRIu64
	       "\nhourly_bytes_per_sample=%.3f\nhourly_block_stacks=%" PRIu64 "\n",
	       ss.blocks, ss.block_bytes, (double)ss.block_bytes / (double)ss.block_rows,
	       ss.block_stacks);
	fflush(stdout);
	scan(st, "1h_hourly", T0 + (int64_t)(hours / 2) * 3600 * SEC,
	     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1, 5);
	scan(st, "24h_hourly", T0, T0 + DAY - 1, 3);
	t = now_s();
	uint32_t n, total = 0;
	do {
		PROF_ASSERT(store_compact(st, true, &n, &err) == 0);
		total += n;
	} while (n);
	printf("compaction_s=%.2f\ncompacted_inputs=%u\n", now_s() - t, total);
	store_get_stats(st, &ss);
	printf("blocks=%" PRIu64 "\nblock_rows=%" PRIu64 "\nblock_bytes=%" PRIu64
	       "\nblock_stacks=%" PRIu64 "\nblock_locations=%" PRIu64 "\nbytes_per_sample=%.3f\n",
	       ss.blocks, ss.block_rows, ss.block_bytes, ss.block_stacks, ss.block_locations,
	       (double)ss.block_bytes / (double)ss.block_rows);
	printf("rollup_bytes=%" PRIu64 "\n", chunk_bytes(dir, "RHRS"));
	fflush(stdout);
	scan(st, "1h", T0 + (int64_t)(hours / 2) * 3600 * SEC,
	     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1, 5);
	/* half past to half past: no whole hour, every row read from pages */
	scan(st, "1h_offset", T0 + (int64_t)(hours / 2) * 3600 * SEC - 1800 * SEC,
	     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1800 * SEC - 1, 5);
	/* an hour from the hour rollup and half an hour of rows */
	scan(st, "90m", T0 + (int64_t)(hours / 2) * 3600 * SEC - 1800 * SEC,
	     T0 + (int64_t)(hours / 2 + 1) * 3600 * SEC - 1, 5);
	scan(st, "24h", T0, T0 + DAY - 1, 3);
	if (g_attrs)
		scan_thread(st, "24h_thread", T0, T0 + DAY - 1, 3);
	printf("max_rss_mb=%" PRIu64 "\n", rss_mb());
	store_close(st);
	free(idir);

	if (base_min) {
		uint64_t bb, bs;

		t = now_s();
		baseline((int64_t)base_min * 6, &bb, &bs);
		printf("baseline_minutes=%" PRIu64 "\nbaseline_samples=%" PRIu64
		       "\nbaseline_bytes=%" PRIu64
		       "\nbaseline_bytes_per_sample=%.3f\nbaseline_s=%.2f\n",
		       base_min, bs, bb, (double)bb / (double)bs, now_s() - t);
	}
	return 0;
}
