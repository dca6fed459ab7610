// SPDX-License-Identifier: Apache-2.0
/*
 * test_scrape.c - the scrape module without a network: the YAML config
 * (every field, the defaults and the CPU seconds rule, each kind of
 * mistake naming line and key, the server-embedded mode), target files
 * (JSON and YAML, bad entries), relabeling (replace with $1 / ${name} /
 * "$1x", keep, drop, labelmap, labeldrop, hashmod), deltas of cumulative
 * profiles (priming, differences per stack, duplicates summed, zero
 * deltas dropped, counter resets, a refused delta kept for the next one,
 * type changes), column shaping of heap/allocs, and file mode (each file
 * once, across a restart, copies and touches skipped, garbage recorded,
 * a refusing sink retried).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/pprof.h"
#include "scrape/config.h"
#include "scrape/delta.h"
#include "scrape/relabel.h"
#include "scrape/watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static int parse(const char *yaml, unsigned flags, struct scrape_config *c, struct prof_err *err)
{
	prof_err_init(err);
	return scrape_config_parse(yaml, strlen(yaml), "/etc/profd/scrape.yaml", flags, c, err);
}

static void test_config_full_file(void **state)
{
	static const char y[] =
		"global:\n"
		"  scrape_interval: 4s\n"
		"  body_size_limit: 2MiB\n"
		"scrape_configs:\n"
		"  - job_name: api\n"
		"    scrape_timeout: 1s\n"
		"    scheme: https\n"
		"    path_prefix: /app/\n"
		"    dataset: prod\n"
		"    profiles: [cpu, heap, {name: mutex, delta: false}, {name: fgprof, path: "
		"/debug/fgprof}]\n"
		"    static_configs:\n"
		"      - targets: ['10.0.0.1:6060', '[::1]:6060']\n"
		"        labels: {env: prod, service.name: api}\n"
		"    file_sd_configs:\n"
		"      - files: ['targets/[a-z]*.json', '/abs/t.yaml']\n"
		"        refresh_interval: 30s\n"
		"    relabel_configs:\n"
		"      - source_labels: [__address__]\n"
		"        regex: '(.*):6060'\n"
		"        target_label: host\n"
		"  - job_name: quick\n"
		"    scrape_interval: 1500ms\n"
		"watch_configs:\n"
		"  - files: [pprof/x-*.pb.gz]\n"
		"    labels: {team: core}\n";
	struct scrape_config c;
	struct prof_err err;
	const struct scrape_job_conf *j;

	(void)state;
	assert_int_equal(parse(y, 0, &c, &err), 0);
	assert_int_equal(c.njobs, 2);
	j = &c.jobs[0];
	assert_string_equal(j->name, "api");
	assert_int_equal(j->interval_ns, 4000000000LL);
	assert_int_equal(j->timeout_ns, 1000000000LL);
	assert_string_equal(j->scheme, "https");
	assert_string_equal(j->path_prefix, "/app");
	assert_string_equal(j->dataset, "prod");
	assert_int_equal(j->body_size_limit, 2 << 20);
	assert_int_equal(j->nprofiles, 4);
	assert_int_equal(j->profiles[0].kind, SCRAPE_KIND_CPU);
	assert_string_equal(j->profiles[0].path, "/debug/pprof/profile");
	assert_int_equal(j->profiles[0].seconds, 3); /* 4s interval - 1 */
	assert_int_equal(j->profiles[1].kind, SCRAPE_KIND_HEAP);
	assert_false(j->profiles[1].delta);
	assert_int_equal(j->profiles[2].kind, SCRAPE_KIND_MUTEX);
	assert_false(j->profiles[2].delta); /* overridden */
	assert_int_equal(j->profiles[3].kind, SCRAPE_KIND_CUSTOM);
	assert_string_equal(j->profiles[3].path, "/debug/fgprof");
	assert_int_equal(j->ngroups, 1);
	assert_int_equal(j->groups[0].ntargets, 2);
	assert_string_equal(j->groups[0].targets[1], "[::1]:6060");
	assert_string_equal(scrape_labels_get(&j->groups[0].labels, "service.name"), "api");
	assert_int_equal(j->nfile_sds, 1);
	assert_string_equal(j->file_sds[0].files[0], "/etc/profd/targets/[a-z]*.json");
	assert_string_equal(j->file_sds[0].files[1], "/abs/t.yaml");
	assert_int_equal(j->file_sds[0].refresh_ns, 30000000000LL);
	assert_int_equal(j->nrelabel, 1);
	assert_non_null(j->relabel[0].re);
	/* defaults: six Go profiles, timeout capped at the interval, CPU at least 1 s */
	j = &c.jobs[1];
	assert_int_equal(j->nprofiles, 6);
	assert_int_equal(j->timeout_ns, 1500000000LL);
	assert_int_equal(j->profiles[0].seconds, 1);
	assert_true(j->profiles[2].delta); /* allocs */
	assert_string_equal(j->scheme, "http");
	assert_int_equal(c.nwatches, 1);
	assert_string_equal(c.watches[0].name, "files");
	assert_string_equal(c.watches[0].files[0], "/etc/profd/pprof/x-*.pb.gz");
	assert_string_equal(scrape_labels_get(&c.watches[0].labels, "team"), "core");
	scrape_config_release(&c);

	assert_int_equal(scrape_cpu_seconds(10000000000LL), 9);
	assert_int_equal(scrape_cpu_seconds(2000000000LL), 1);
	assert_int_equal(scrape_cpu_seconds(500000000LL), 1);
}

static void test_config_mistakes(void **state)
{
	static const struct {
		const char *yaml, *want;
	} bad[] = {
		{ "scrape_configs:\n  - job_name: a\n    colour: red\n", "scrape.yaml:3: " },
		{ "scrape_configs:\n  - job_name: a\n    colour: red\n", "unknown key 'colour'" },
		{ "scrape_configs:\n  - scrape_interval: 5s\n", "missing: job_name" },
		{ "scrape_configs:\n  - job_name: a\n    scrape_interval: 2s\n    scrape_timeout: 3s\n",
		  "longer than scrape_interval" },
		{ "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: "
		  "['http://h:1']\n",
		  "not host:port" },
		{ "scrape_configs:\n  - job_name: a\n    static_configs:\n      - targets: ['h:99999']\n",
		  "not host:port" },
		{ "scrape_configs:\n  - job_name: a\n    profiles: [cpux]\n",
		  "unknown profile 'cpux'" },
		{ "scrape_configs:\n  - job_name: a\n  - job_name: a\n", "used by two jobs" },
		{ "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    profiles: [{name: cpu, "
		  "seconds: 5}]\n",
		  "shorter than scrape_interval" },
		{ "scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - regex: '(['\n        "
		  "target_label: x\n",
		  "regex '(['" },
		{ "scrape_configs:\n  - job_name: a\n    relabel_configs:\n      - action: replace\n",
		  "needs a target_label" },
		{ "scrape_configs:\n  - job_name: a\n    body_size_limit: 12 parsecs\n",
		  "body_size_limit" },
		{ "scrape_configs:\n  - job_name: a\n    static_configs:\n      - labels: {__x: 1}\n",
		  "reserved" },
		{ "scrape_configs:\n  - job_name: a\n    scheme: ftp\n", "expected http or https" },
		{ "scrape_configs: [\n", "YAML" },
		{ "datasets: []\n", "unknown key 'datasets'" },
		{ "", "empty" },
	};
	struct scrape_config c;
	struct prof_err err;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		int rc = parse(bad[i].yaml, 0, &c, &err);

		if (!rc || !strstr(err.msg, bad[i].want))
			fail_msg("case %zu: rc=%d msg='%s', want '%s'", i, rc, err.msg,
				 bad[i].want);
		scrape_config_release(&c);
	}
	/* Embedded in the server's file: its keys are not ours; no scrape keys = empty. */
	assert_int_equal(
		parse("datasets: [{name: x}]\ntokens: []\n", SCRAPE_CONF_EMBEDDED, &c, &err), 0);
	assert_int_equal(c.njobs, 0);
	scrape_config_release(&c);
	assert_int_equal(parse("datasets: [{name: x}]\nscrape_configs:\n  - job_name: j\n",
			       SCRAPE_CONF_EMBEDDED, &c, &err),
			 0);
	assert_int_equal(c.njobs, 1);
	scrape_config_release(&c);
}

static void test_sd_files(void **state)
{
	static const char js[] = "[{\"targets\": [\"a:1\", \"b:2\"], \"labels\": {\"env\": \"x\"}},"
				 " {\"targets\": [\"c:3\"]}]";
	static const char ym[] = "- targets: [a:1]\n  labels:\n    zone: eu\n";
	struct scrape_group *g;
	struct prof_err err;
	size_t n;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(scrape_sd_parse(js, strlen(js), "t.json", &g, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(g[0].ntargets, 2);
	assert_string_equal(g[0].targets[1], "b:2");
	assert_string_equal(scrape_labels_get(&g[0].labels, "env"), "x");
	assert_string_equal(g[1].targets[0], "c:3");
	scrape_groups_free(g, n);
	assert_int_equal(scrape_sd_parse(ym, strlen(ym), "t.yml", &g, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(scrape_labels_get(&g[0].labels, "zone"), "eu");
	scrape_groups_free(g, n);
	/* Sniffed: no extension, JSON by its first byte; an empty YAML file is no targets. */
	assert_int_equal(scrape_sd_parse(js, strlen(js), "targets", &g, &n, &err), 0);
	assert_int_equal(n, 2);
	scrape_groups_free(g, n);
	assert_int_equal(scrape_sd_parse("", 0, "t.yaml", &g, &n, &err), 0);
	assert_int_equal(n, 0);

	static const char *const bad[] = {
		"{\"targets\": []}",
		"[{\"targets\": [\"a\"]}]",
		"[{\"targets\": [1]}]",
		"[{\"labels\": {\"a b\": \"x\"}}]",
		"[{\"targets\": [\"a:1\"], \"x\": 1}]",
		"[{\"labels\": {\"k\": 5}}]",
		"[1]",
		"[{\"targets\": [\"a:1\"]",
	};
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		prof_err_init(&err);
		if (!scrape_sd_parse(bad[i], strlen(bad[i]), "t.json", &g, &n, &err))
			fail_msg("bad target file %zu accepted", i);
		assert_null(g);
		assert_non_null(strstr(err.msg, "t.json"));
	}
}

static struct scrape_relabel rule(enum scrape_relabel_action a, const char *src, const char *regex,
				  const char *target, const char *repl)
{
	struct scrape_relabel r = { 0 };
	struct prof_err err;

	r.action = a;
	if (src) {
		r.source_labels = xcalloc(1, sizeof(char *));
		r.source_labels[0] = xstrdup(src);
		r.nsource = 1;
	}
	r.regex = regex ? xstrdup(regex) : NULL;
	r.target_label = target ? xstrdup(target) : NULL;
	r.replacement = repl ? xstrdup(repl) : NULL;
	r.modulus = 4;
	prof_err_init(&err);
	assert_int_equal(scrape_relabel_compile(&r, &err), 0);
	return r;
}

static void test_relabel(void **state)
{
	struct scrape_relabel r[6];
	struct scrape_labels ls = { 0 };

	(void)state;
	scrape_labels_set(&ls, "__address__", "host1:6060");
	scrape_labels_set(&ls, "__meta_zone", "eu-1");
	scrape_labels_set(&ls, "job", "api");
	r[0] = rule(SCRAPE_RELABEL_REPLACE, "__address__", "(?<h>[^:]+):(\\d+)", "host", "${h}-$2");
	r[1] = rule(SCRAPE_RELABEL_LABELMAP, NULL, "__meta_(.*)", NULL, "m_$1");
	r[2] = rule(SCRAPE_RELABEL_REPLACE, "job", "(.*)", "x",
		    "$1x"); /* "$1x" is group "1x": "" */
	r[3] = rule(SCRAPE_RELABEL_HASHMOD, "__address__", NULL, "shard", NULL);
	r[4] = rule(SCRAPE_RELABEL_LABELDROP, NULL, "m_.*", NULL, NULL);
	r[5] = rule(SCRAPE_RELABEL_KEEP, "job", "api|web", NULL, NULL);
	assert_true(scrape_relabel_apply(r, 2, &ls));
	assert_string_equal(scrape_labels_get(&ls, "host"), "host1-6060");
	assert_string_equal(scrape_labels_get(&ls, "m_zone"), "eu-1");
	assert_true(scrape_relabel_apply(&r[2], 4, &ls));
	assert_null(scrape_labels_get(&ls, "x"));
	assert_null(scrape_labels_get(&ls, "m_zone"));
	uint64_t shard;
	assert_int_equal(parse_u64(scrape_labels_get(&ls, "shard"), &shard), 0);
	assert_true(shard < 4);
	/* drop by a regex that must match the whole value */
	struct scrape_relabel d = rule(SCRAPE_RELABEL_DROP, "job", "ap", NULL, NULL);
	assert_true(scrape_relabel_apply(&d, 1, &ls));
	scrape_relabel_release(&d);
	d = rule(SCRAPE_RELABEL_DROP, "job", "ap.", NULL, NULL);
	assert_false(scrape_relabel_apply(&d, 1, &ls));
	scrape_relabel_release(&d);
	/* keep fails for another job */
	scrape_labels_set(&ls, "job", "batch");
	assert_false(scrape_relabel_apply(&r[5], 1, &ls));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(r); i++)
		scrape_relabel_release(&r[i]);
	scrape_labels_release(&ls);
	/* label sets stay sorted and unique */
	scrape_labels_set(&ls, "b", "1");
	scrape_labels_set(&ls, "a", "2");
	scrape_labels_set(&ls, "b", "3");
	assert_int_equal(ls.l.n, 2);
	assert_string_equal(ls.l.v[0].name, "a");
	assert_string_equal(ls.l.v[1].value, "3");
	scrape_labels_del(&ls, "a");
	assert_int_equal(ls.l.n, 1);
	scrape_labels_release(&ls);
}

/* A mutex-like profile: @n stacks f<i> -> main with (count, delay) values. */
static void mk_profile(struct model_profile *p, size_t n, const int64_t (*vals)[2],
		       const char *const *fn, int64_t time_ns)
{
	model_profile_init(p);
	model_sample_type_add(p, "contentions", "count");
	model_sample_type_add(p, "delay", "nanoseconds");
	p->period_type.type = model_intern(p, "contentions");
	p->period_type.unit = model_intern(p, "count");
	p->time_ns = time_ns;
	struct model_function mainf = { model_intern(p, "main"), 0, 0, 0 };
	struct model_line ml = { model_function_add(p, &mainf), 1, 0 };
	uint32_t mainloc = model_location_add(p, 0, 0x1000, &ml, 1);

	for (size_t i = 0; i < n; i++) {
		struct model_function f = { model_intern(p, fn[i]), 0, 0, 0 };
		struct model_line l = { model_function_add(p, &f), 10, 0 };
		uint32_t locs[2] = { model_location_add(p, 0, 0x2000 + (uint64_t)fn[i][0], &l, 1),
				     mainloc };
		uint32_t off = model_stack_add(p, locs, 2);

		model_sample_add(p, off, 2, vals[i], NULL, 0, 0, 0);
	}
}

static int64_t value_of(const struct model_profile *p, const char *fn, int col)
{
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		const struct model_location *l = &p->locations.v[p->stack_locs.v[s->stack_off]];
		const struct model_line *ln = &p->lines.v[l->line_off];

		if (!strcmp(model_str(p, p->functions.v[ln->function].name), fn))
			return p->values.v[s->value_off + col];
	}
	return -1;
}

static void test_delta(void **state)
{
	static const char *const fn[] = { "a", "b", "a" };
	struct scrape_delta *d = scrape_delta_new();
	struct model_profile p;
	struct prof_err err;
	bool had;

	(void)state;
	/* 1st: primes only. The duplicate stack "a" is summed into one identity. */
	int64_t v1[3][2] = { { 5, 50 }, { 2, 20 }, { 1, 10 } };
	mk_profile(&p, 3, v1, fn, 1000);
	assert_int_equal(scrape_delta_compute(d, &p, &had, &err), 0);
	assert_false(had);
	assert_int_equal(p.samples.n, 0);
	scrape_delta_commit(d);
	assert_int_equal(scrape_delta_stacks(d), 2);
	model_profile_release(&p);
	/* 2nd: a grew by 3 (6+... = 9 vs 6), b unchanged -> dropped. */
	int64_t v2[3][2] = { { 8, 80 }, { 2, 20 }, { 1, 10 } };
	mk_profile(&p, 3, v2, fn, 3000);
	assert_int_equal(scrape_delta_compute(d, &p, &had, &err), 0);
	assert_true(had);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(value_of(&p, "a", 0), 3);
	assert_int_equal(value_of(&p, "a", 1), 30);
	assert_int_equal(p.duration_ns, 2000);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	/* The store refused it: the baseline stays, the next delta covers both. */
	scrape_delta_discard(d);
	model_profile_release(&p);
	int64_t v3[3][2] = { { 9, 90 }, { 4, 40 }, { 1, 10 } };
	mk_profile(&p, 3, v3, fn, 5000);
	assert_int_equal(scrape_delta_compute(d, &p, &had, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(value_of(&p, "a", 0), 4);
	assert_int_equal(value_of(&p, "b", 0), 2);
	scrape_delta_commit(d);
	model_profile_release(&p);
	/* A counter below its baseline: the process restarted; take the value. */
	int64_t v4[3][2] = { { 1, 10 }, { 4, 40 }, { 0, 0 } };
	mk_profile(&p, 3, v4, fn, 6000);
	assert_int_equal(scrape_delta_compute(d, &p, &had, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(value_of(&p, "a", 0), 1);
	scrape_delta_commit(d);
	model_profile_release(&p);
	/* Other sample types: primes again. */
	model_profile_init(&p);
	model_sample_type_add(&p, "samples", "count");
	assert_int_equal(scrape_delta_compute(d, &p, &had, &err), 0);
	assert_false(had);
	model_profile_release(&p);
	scrape_delta_free(d);
}

static void test_shape_columns(void **state)
{
	struct model_profile p;
	int64_t v[4] = { 1, 100, 2, 200 };
	uint32_t loc, off;

	(void)state;
	model_profile_init(&p);
	model_sample_type_add(&p, "alloc_objects", "count");
	model_sample_type_add(&p, "alloc_space", "bytes");
	model_sample_type_add(&p, "inuse_objects", "count");
	model_sample_type_add(&p, "inuse_space", "bytes");
	p.period_type.type = model_intern(&p, "space");
	p.period_type.unit = model_intern(&p, "bytes");
	loc = model_location_add(&p, 0, 0x10, NULL, 0);
	off = model_stack_add(&p, &loc, 1);
	model_sample_add(&p, off, 1, v, NULL, 0, 0, 0);
	model_sample_add(&p, off, 1, v, NULL, 0, 0, 0);
	scrape_profile_shape(&p, SCRAPE_KIND_HEAP, NULL);
	assert_int_equal(p.sample_types.n, 2);
	assert_string_equal(model_str(&p, p.sample_types.v[1].type), "inuse_space");
	assert_int_equal(p.values.v[p.samples.v[1].value_off + 1], 200);
	assert_string_equal(model_str(&p, p.name), "memory");
	char id[128];
	model_profile_type_id(&p, 1, id, sizeof(id));
	assert_string_equal(id, "memory:inuse_space:bytes:space:bytes");
	model_profile_release(&p);
}

/* --- file mode ------------------------------------------------------------------------ */

struct rec_sink {
	int calls, refuse;
	int64_t total;
	char job[64];
};

static int rec_submit(void *arg, const char *dataset, struct model_profile *const *p, size_t n,
		      struct prof_err *err)
{
	struct rec_sink *r = arg;

	(void)dataset;
	if (r->refuse)
		return prof_err_set(err, -EIO, -1, "refused");
	for (size_t i = 0; i < n; i++) {
		const char *job = model_attr_get(p[i], "job");

		snprintf(r->job, sizeof(r->job), "%s", job ? job : "");
		for (size_t k = 0; k < p[i]->values.n; k++)
			r->total += p[i]->values.v[k];
	}
	r->calls++;
	return 0;
}

static void write_pprof(const char *path, int64_t value)
{
	struct model_profile p;
	struct buf b;
	uint32_t loc, off;

	model_profile_init(&p);
	model_sample_type_add(&p, "samples", "count");
	loc = model_location_add(&p, 0, 0x10, NULL, 0);
	off = model_stack_add(&p, &loc, 1);
	model_sample_add(&p, off, 1, &value, NULL, 0, 0, 0);
	buf_init(&b, 0);
	assert_int_equal(fmt_pprof_encode(&p, true, &b), 0);
	assert_int_equal(buf_write_file(path, b.p, b.len), 0);
	buf_release(&b);
	model_profile_release(&p);
}

static void backdate(const char *path)
{
	struct timespec ts[2];

	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 10;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_watch_once_across_restarts(void **state)
{
	char dir[] = "/tmp/profd-test-watch.XXXXXX", path[256], state_path[256], glob[256];
	struct scrape_watch_conf wc = { 0 };
	struct rec_sink rec = { 0 };
	struct scrape_sink sink = { rec_submit, &rec };
	struct scrape_watch *w;
	struct scrape_watch_result r;
	struct prof_err err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(glob, sizeof(glob), "%s/*.pb.gz", dir);
	snprintf(state_path, sizeof(state_path), "%s/state", dir);
	char *files[1] = { glob };
	wc.name = (char *)"files";
	wc.files = files;
	wc.nfiles = 1;
	wc.poll_ns = 1000000000;
	wc.settle_ns = 1000000000;
	wc.max_file_size = 1 << 20;

	snprintf(path, sizeof(path), "%s/a.pb.gz", dir);
	write_pprof(path, 7);
	prof_err_init(&err);
	assert_int_equal(scrape_watch_new(&wc, 1, state_path, &sink, false, &w, &err), 0);
	/* Too fresh: left for later. */
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.unsettled, 1);
	assert_int_equal(rec.calls, 0);
	backdate(path);
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.ingested, 1);
	assert_int_equal(rec.calls, 1);
	assert_int_equal(rec.total, 7);
	assert_string_equal(rec.job, "files");
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.ingested, 0);
	assert_int_equal(r.skipped, 1);
	/* A copy under another name and a touch: same content, not sent again. */
	char copy[256];
	struct buf b;
	snprintf(copy, sizeof(copy), "%s/copy.pb.gz", dir);
	buf_init(&b, 0);
	assert_int_equal(buf_read_file(&b, path), 0);
	assert_int_equal(buf_write_file(copy, b.p, b.len), 0);
	buf_release(&b);
	backdate(copy);
	assert_int_equal(utimensat(AT_FDCWD, path, NULL, 0), 0);
	backdate(path);
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.ingested, 0);
	assert_int_equal(r.skipped, 2);
	/* Garbage: recorded as bad, not retried. A refusing sink: retried. */
	char junk[256];
	snprintf(junk, sizeof(junk), "%s/junk.pb.gz", dir);
	assert_int_equal(buf_write_file(junk, "\x1f\x8bnot gzip", 10), 0);
	backdate(junk);
	char b2[256];
	snprintf(b2, sizeof(b2), "%s/b.pb.gz", dir);
	write_pprof(b2, 11);
	backdate(b2);
	rec.refuse = 1;
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.bad, 1);
	assert_int_equal(r.failed, 1);
	assert_int_equal(r.ingested, 0);
	scrape_watch_free(w);
	/* Restart: only b (refused before) is sent. */
	rec.refuse = 0;
	assert_int_equal(scrape_watch_new(&wc, 1, state_path, &sink, false, &w, &err), 0);
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.ingested, 1);
	assert_int_equal(r.bad, 0);
	assert_int_equal(rec.calls, 2);
	assert_int_equal(rec.total, 18);
	/* Changed content at the same path: sent again. */
	write_pprof(path, 5);
	backdate(path);
	assert_int_equal(scrape_watch_poll(w, &r), 0);
	assert_int_equal(r.ingested, 1);
	assert_int_equal(rec.total, 23);
	scrape_watch_free(w);
	unlink(path);
	unlink(copy);
	unlink(junk);
	unlink(b2);
	unlink(state_path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_full_file),
		cmocka_unit_test(test_config_mistakes),
		cmocka_unit_test(test_sd_files),
		cmocka_unit_test(test_relabel),
		cmocka_unit_test(test_delta),
		cmocka_unit_test(test_shape_columns),
		cmocka_unit_test(test_watch_once_across_restarts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
