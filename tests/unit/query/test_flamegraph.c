// SPDX-License-Identifier: Apache-2.0
/*
 * test_flamegraph.c - flame graphs from the store's head: recursion
 * (A;B;A;D) keeps its path; a 30000-deep stack builds and serializes on
 * a 256 KiB thread stack (nothing recurses); inline chains expand outer
 * first, innermost deepest; unsymbolized native frames are resolved by
 * the symbolizer from this test binary, else named module+0xaddr, never
 * dropped; max_nodes merges the rest into an explicit "other" node with
 * the totals preserved; shaping a stack set's trie (flame graph, diff)
 * gives the generic path's tree; selection by matchers, type and time
 * range; the JSON has the documented shape.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "model/profile.h"
#include "query/diff.h"
#include "query/flamegraph.h"
#include "query/stackset.h"
#include "query/selector.h"
#include "store/head.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"
#include "unit/testlib.h"

#include <jansson.h>
#include <pthread.h>

#include <setjmp.h>
#include <cmocka.h>

#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define T0  1700000000000000000LL /* ns */

int test_flamegraph_marker(int x);
__attribute__((noinline)) int test_flamegraph_marker(int x)
{
	volatile int v = x;

	for (int i = 0; i < 3; i++)
		v = v * 5 + i;
	return v;
}

/* --- building profiles --------------------------------------------------------- */

/* A CPU profile of @service at T0, pid 42 (the rest: unit/testlib.h). */
static void prof_init(struct model_profile *p, const char *service)
{
	tl_profile_init_attr(p, false, "service.name", service);
	p->time_ns = T0;
	model_attr_add_num(p, "process.pid", 42);
}

static void head_add_ok(struct store_head *h, struct model_profile *p)
{
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(model_profile_validate(p, &err), 0);
	assert_int_equal(store_head_add(h, p, T0, &err), 0);
	model_profile_release(p);
}

/* The query layer reads a store; these tests build a head by hand. */
static int build_head(struct store_head *h, const struct query_flame_params *p,
		      struct query_flamegraph *fg, struct prof_err *err)
{
	struct store *st;

	store_open_head(h, &st);
	int rc = query_flamegraph_build(st, p, fg, err);
	store_close(st);
	return rc;
}

static void build_ok(struct store_head *h, const char *selector, size_t max_nodes,
		     struct symbolizer *sym, struct query_flamegraph *fg)
{
	struct query_selector sel;
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(query_selector_parse(selector, &sel, &err), 0);
	struct query_flame_params p = {
		.type = CPU,
		.m = sel.m,
		.nm = sel.n,
		.from_ns = 0,
		.to_ns = INT64_MAX,
		.max_nodes = max_nodes,
		.sym = sym,
	};
	assert_int_equal(build_head(h, &p, fg, &err), 0);
	query_selector_release(&sel);
}

/* --- tree access ----------------------------------------------------------------- */

static const char *node_name(const struct query_flamegraph *fg, uint32_t id)
{
	return strtab_get(&fg->names, fg->nodes.v[id].name);
}

/* The node at path "A;B;C" under the root, or UINT32_MAX. */
static uint32_t find_path(const struct query_flamegraph *fg, const char *path)
{
	uint32_t at = 0;

	for (const char *s = path; *s;) {
		size_t k = strcspn(s, ";");
		const struct query_flame_node *nd = &fg->nodes.v[at];
		uint32_t next = UINT32_MAX;

		for (uint32_t c = 0; c < nd->nchildren; c++) {
			uint32_t ch = fg->children.v[nd->child_off + c];
			const char *nm = node_name(fg, ch);

			if (strlen(nm) == k && !memcmp(nm, s, k))
				next = ch;
		}
		if (next == UINT32_MAX)
			return UINT32_MAX;
		at = next;
		s += k;
		if (*s == ';')
			s++;
	}
	return at;
}

static void expect_node(const struct query_flamegraph *fg, const char *path, int64_t self,
			int64_t total)
{
	uint32_t id = find_path(fg, path);

	if (id == UINT32_MAX)
		fail_msg("no node at path %s", path);
	if (fg->nodes.v[id].self != self || fg->nodes.v[id].total != total)
		fail_msg("%s: self %lld total %lld, want %lld %lld", path,
			 (long long)fg->nodes.v[id].self, (long long)fg->nodes.v[id].total,
			 (long long)self, (long long)total);
}

/* Every kept node: total == self + sum of its children's totals. */
static void check_totals(const struct query_flamegraph *fg)
{
	for (size_t i = 0; i < fg->nodes.n; i++) {
		const struct query_flame_node *nd = &fg->nodes.v[i];
		int64_t sum = nd->self;

		if (nd->dropped)
			continue;
		for (uint32_t c = 0; c < nd->nchildren; c++)
			sum += fg->nodes.v[fg->children.v[nd->child_off + c]].total;
		assert_int_equal(sum, nd->total);
	}
}

/* --- tests ------------------------------------------------------------------------- */

static void test_flamegraph_recursion_keeps_call_paths(void **state)
{
	struct store_head *h = store_head_new();
	struct query_flamegraph fg;
	struct model_profile p;

	(void)state;
	prof_init(&p, "api");
	tl_sample(&p, "A;B;A;D", 10, T0);
	tl_sample(&p, "A;B", 5, T0 + 1);
	tl_sample(&p, "A;D", 2, T0 + 2);
	tl_sample(&p, "A;B;A;D", 1, T0 + 3); /* same stack again: adds up */
	head_add_ok(h, &p);

	build_ok(h, "", 0, NULL, &fg);
	assert_int_equal(fg.total, 18);
	assert_string_equal(fg.unit, "nanoseconds");
	assert_int_equal(fg.samples, 4);
	expect_node(&fg, "A", 0, 18);
	expect_node(&fg, "A;B", 5, 16);
	expect_node(&fg, "A;B;A", 0, 11);
	expect_node(&fg, "A;B;A;D", 11, 11);
	expect_node(&fg, "A;D", 2, 2);
	check_totals(&fg);
	/* Children sorted by total, descending. */
	const struct query_flame_node *a = &fg.nodes.v[find_path(&fg, "A")];
	assert_int_equal(a->nchildren, 2);
	assert_string_equal(node_name(&fg, fg.children.v[a->child_off]), "B");
	query_flamegraph_release(&fg);
	store_head_free(h);
}

#define DEEP 30000

struct deep_job {
	struct store_head *h;
	struct query_flamegraph fg;
	struct buf json;
	int rc;
};

static void *deep_build(void *arg)
{
	struct deep_job *j = arg;
	struct query_flame_params p = { .type = CPU, .from_ns = 0, .to_ns = INT64_MAX };
	struct prof_err err;

	prof_err_init(&err);
	j->rc = build_head(j->h, &p, &j->fg, &err);
	if (!j->rc)
		j->rc = query_flamegraph_write_json(&j->fg, CPU, 0, &j->json);
	return NULL;
}

static void test_flamegraph_30000_deep_stack_without_recursion(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	uint32_t *locs = xcalloc(DEEP, sizeof(uint32_t));
	char name[32];

	(void)state;
	prof_init(&p, "deep");
	for (uint32_t i = 0; i < DEEP; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		locs[i] = tl_fn_loc(&p, name, strlen(name));
	}
	tl_sample_locs(&p, locs, DEEP, 7, T0, NULL, 0);
	/* And a self-recursive function 30000 deep. */
	uint32_t r = tl_fn_loc(&p, "r", 1);
	for (uint32_t i = 0; i < DEEP; i++)
		locs[i] = r;
	tl_sample_locs(&p, locs, DEEP, 3, T0, NULL, 0);
	free(locs);
	head_add_ok(h, &p);

	/* Build and serialize on a small stack: any recursion per frame would overflow it. */
	struct deep_job j = { .h = h };
	pthread_attr_t attr;
	pthread_t th;
	buf_init(&j.json, 0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	assert_int_equal(pthread_create(&th, &attr, deep_build, &j), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	assert_int_equal(j.rc, 0);

	assert_int_equal(j.fg.total, 10);
	/* Walk down the single chain of f0..f29999. */
	uint32_t at = find_path(&j.fg, "f0"), depth = 1;
	while (j.fg.nodes.v[at].nchildren) {
		assert_int_equal(j.fg.nodes.v[at].nchildren, 1);
		at = j.fg.children.v[j.fg.nodes.v[at].child_off];
		depth++;
	}
	assert_int_equal(depth, DEEP);
	snprintf(name, sizeof(name), "f%u", DEEP - 1);
	assert_string_equal(node_name(&j.fg, at), name);
	assert_int_equal(j.fg.nodes.v[at].self, 7);
	check_totals(&j.fg);

	/* The JSON nests 2 * 30000 + 1 objects and closes every one. */
	size_t opens = 0, closes = 0;
	for (size_t i = 0; i < j.json.len; i++) {
		opens += j.json.p[i] == '{';
		closes += j.json.p[i] == '}';
	}
	assert_int_equal(opens, closes);
	assert_int_equal(opens, 2 * DEEP + 1 /* root */ + 1 /* envelope */ + 1 /* truncated */);
	query_flamegraph_release(&j.fg);
	buf_release(&j.json);
	store_head_free(h);
}

static void test_flamegraph_inline_chain_expands_innermost_deepest(void **state)
{
	struct store_head *h = store_head_new();
	struct query_flamegraph fg;
	struct model_profile p;

	(void)state;
	prof_init(&p, "inl");
	/* One location where memcpy was inlined into printf (lines[0] innermost). */
	struct model_line lines[2] = {
		{ model_function_intern(&p, model_intern(&p, "memcpy"), 0, 0, 0), 10, 0 },
		{ model_function_intern(&p, model_intern(&p, "printf"), 0, 0, 0), 20, 0 },
	};
	uint32_t locs[2] = { tl_fn_loc(&p, "main", 4), model_location_add(&p, 0, 0x40, lines, 2) };
	tl_sample_locs(&p, locs, 2, 9, T0, NULL, 0);
	head_add_ok(h, &p);

	build_ok(h, "{}", 0, NULL, &fg);
	expect_node(&fg, "main", 0, 9);
	expect_node(&fg, "main;printf", 0, 9);
	expect_node(&fg, "main;printf;memcpy", 9, 9);
	query_flamegraph_release(&fg);
	store_head_free(h);
}

/* Runtime address -> (file path, ELF vaddr, build ID) of this test binary. */
static bool self_frame(uintptr_t addr, char *path, size_t pathsz, uint64_t *vaddr, char *bid,
		       size_t bidsz)
{
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t off = 0;
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], pth[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &pgoff,
			   pth) < 5)
			continue;
		if (addr >= start && addr < end && pth[0] == '/') {
			snprintf(path, pathsz, "%s", pth);
			off = addr - start + pgoff;
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return false;
	struct sym_elf *e;
	struct prof_err err;
	prof_err_init(&err);
	if (sym_elf_open(path, &e, &err))
		return false;
	snprintf(bid, bidsz, "%s", sym_elf_build_id(e));
	found = sym_elf_offset_to_vaddr(e, off, vaddr) == 0;
	sym_elf_free(e);
	return found;
}

static void test_flamegraph_native_frames_resolved_or_named_never_dropped(void **state)
{
	struct store_head *h = store_head_new();
	struct symbolizer *sym = symbolizer_new(4);
	symbolizer_set_symbol_paths(sym, (const char *const[]){ "/" }, 1, NULL);
	struct query_flamegraph fg;
	struct model_profile p;
	char path[4096], bid[128];
	uint64_t vaddr;

	(void)state;
	assert_int_equal(test_flamegraph_marker(1) != 0, 1);
	assert_true(self_frame((uintptr_t)test_flamegraph_marker, path, sizeof(path), &vaddr, bid,
			       sizeof(bid)));
	prof_init(&p, "native");
	struct model_mapping self = { 0 }, lib = { 0 };
	self.memory_limit = UINT64_MAX;
	self.filename = model_intern(&p, path);
	self.build_id = model_intern(&p, bid);
	lib.memory_limit = UINT64_MAX;
	lib.filename = model_intern(&p, "/nonexistent/lib/libfoo.so.1");
	lib.build_id = model_intern(&p, "abcdef");
	uint32_t ms = model_mapping_add(&p, &self), ml = model_mapping_add(&p, &lib);
	uint32_t resolved = model_location_add(&p, ms, vaddr, NULL, 0);
	uint32_t missing = model_location_add(&p, ml, 0x1234, NULL, 0);
	uint32_t bare = model_location_add(&p, 0, 0xdead, NULL, 0);
	uint32_t main_loc = tl_fn_loc(&p, "main", 4);
	uint32_t s1[2] = { main_loc, resolved }, s2[2] = { main_loc, missing };
	uint32_t s3[2] = { main_loc, bare };
	tl_sample_locs(&p, s1, 2, 5, T0, NULL, 0);
	tl_sample_locs(&p, s2, 2, 3, T0, NULL, 0);
	tl_sample_locs(&p, s3, 2, 1, T0, NULL, 0);
	head_add_ok(h, &p);

	build_ok(h, "", 0, sym, &fg);
	expect_node(&fg, "main;test_flamegraph_marker", 5, 5);
	expect_node(&fg, "main;libfoo.so.1+0x1234", 3, 3);
	expect_node(&fg, "main;0xdead", 1, 1);
	assert_int_equal(fg.unsymbolized, 2);
	assert_int_equal(fg.total, 9);
	query_flamegraph_release(&fg);

	/* Without a symbolizer nothing is lost either. */
	build_ok(h, "", 0, NULL, &fg);
	char want[4200];
	const char *base = strrchr(path, '/');
	snprintf(want, sizeof(want), "main;%s+0x%" PRIx64, base ? base + 1 : path, vaddr);
	expect_node(&fg, want, 5, 5);
	assert_int_equal(fg.total, 9);
	query_flamegraph_release(&fg);
	symbolizer_free(sym);
	store_head_free(h);
}

static void test_flamegraph_max_nodes_truncates_into_explicit_other(void **state)
{
	struct store_head *h = store_head_new();
	struct query_flamegraph fg;
	struct model_profile p;
	struct buf json;
	char stack[32];

	(void)state;
	prof_init(&p, "wide");
	for (int i = 0; i < 10; i++) {
		snprintf(stack, sizeof(stack), "main;c%d", i);
		tl_sample(&p, stack, 10 - i, T0);
	}
	head_add_ok(h, &p);

	build_ok(h, "", 5, NULL, &fg);
	assert_int_equal(fg.total, 55);
	expect_node(&fg, "main", 0, 55);
	expect_node(&fg, "main;c0", 10, 10);
	expect_node(&fg, "main;c2", 8, 8);
	assert_int_equal(find_path(&fg, "main;c3"), UINT32_MAX);
	expect_node(&fg, "main;other", 28, 28);
	assert_true(fg.nodes.v[find_path(&fg, "main;other")].other);
	assert_int_equal(fg.truncated_nodes, 7);
	assert_int_equal(fg.truncated_total, 28);
	check_totals(&fg);

	buf_init(&json, 0);
	assert_int_equal(query_flamegraph_write_json(&fg, CPU, 5, &json), 0);
	assert_non_null(strstr(json.p, "\"other\":true"));
	assert_non_null(strstr(json.p, "\"truncated\":{\"nodes\":7,\"total\":28}"));
	buf_release(&json);
	query_flamegraph_release(&fg);

	/* max_nodes = 1 keeps only the root; everything else is "other". */
	build_ok(h, "", 1, NULL, &fg);
	expect_node(&fg, "other", 55, 55);
	assert_int_equal(fg.total, 55);
	query_flamegraph_release(&fg);
	store_head_free(h);
}

static int collect_type(void *arg, const char *type)
{
	struct buf *b = arg;

	return buf_addf(b, "%s|", type);
}

/* --- shaping the trie against the generic tree path -------------------------------- */

/* A node's name and every value, for comparing two trees through their JSON walk. */
static int plain_node_json(const struct query_flamegraph *fg, uint32_t id, struct buf *out,
			   void *arg)
{
	const struct query_flame_node *nd = &fg->nodes.v[id];

	(void)arg;
	return buf_addf(out,
			"{\"%s\":[%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRId64 ",%" PRId64
			",%" PRIu64 ",%d],\"children\":[",
			strtab_get(&fg->names, nd->name), nd->self, nd->total, nd->samples,
			nd->base_self, nd->base_total, nd->base_samples, nd->other);
}

static void tree_text(const struct query_flamegraph *fg, struct buf *out)
{
	buf_reset(out);
	assert_int_equal(buf_addf(out,
				  "%" PRId64 " %" PRId64 " %" PRIu64 " %" PRId64 " %" PRId64 " ",
				  fg->total, fg->base_total, fg->truncated_nodes,
				  fg->truncated_total, fg->truncated_base_total),
			 0);
	assert_int_equal(query_flamegraph_write_tree(fg, 0, plain_node_json, NULL, out), 0);
}

/*
 * query_flamegraph_shape (flame graph and diff from a stack set's trie)
 * against the generic path (a tree node per trie node, then
 * query_flamegraph_finish) on random tries: negative and zero values,
 * nodes without entries, one or two sides, with max_nodes and min_share.
 * The trees, totals and truncation figures must be the same.
 */
static void test_flamegraph_shape_equals_generic_tree(void **state)
{
	uint64_t seed = 5;
	struct buf a, b;

	(void)state;
	buf_init(&a, 0);
	buf_init(&b, 0);
	for (int round = 0; round < 60; round++) {
		bool diff = round % 2;
		struct query_stackset ss;
		char name[16];

		query_stackset_init(&ss);
		ss.nbuckets = diff ? 2 : 1;
		snprintf(ss.unit, sizeof(ss.unit), "nanoseconds");
		for (int k = 0; k < 40 + round * 10; k++) {
			uint32_t at = 0;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			for (uint32_t d = 0, depth = 1 + (uint32_t)(seed >> 60) % 7; d < depth;
			     d++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				int n = snprintf(name, sizeof(name), "f%u",
						 (unsigned)((seed >> 40) % 6));
				at = query_stackset_child(
					&ss, at, query_stackset_name(&ss, name, (size_t)n));
			}
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			if (seed >> 61 == 0)
				continue; /* a node without entries */
			int64_t v = (int64_t)((seed >> 20) % 1000) - (seed >> 58 == 1 ? 1200 : 0);
			uint32_t bucket = diff ? (uint32_t)(seed >> 33) % 2 : 0;
			assert_int_equal(query_stackset_add(&ss, at, 0, bucket,
							    (seed >> 50) % 9 ? v : 0,
							    1 + (seed >> 45) % 3, 0),
					 0);
		}
		size_t max_nodes = round % 3 == 0 ? 0 : 3 + (size_t)(round * 7) % 40;
		double min_share = round % 5 == 1 ? 0.01 * (round % 7) : 0;

		/* The generic path: a tree node per trie node, values per side. */
		struct query_flamegraph ref;
		uint32_t *map = xcalloc(ss.nodes.n + 1, sizeof(uint32_t));
		query_flamegraph_init(&ref, "total");
		ref.diff = diff;
		for (size_t i = 1; i < ss.nodes.n; i++)
			map[i] = query_flamegraph_child(&ref, map[ss.nodes.v[i].parent],
							strtab_get(&ss.names, ss.nodes.v[i].name),
							ss.names.len[ss.nodes.v[i].name]);
		for (size_t i = 0; i < ss.entries.n; i++) {
			const struct query_ss_entry *e = &ss.entries.v[i];
			struct query_flame_node *nd = &ref.nodes.v[map[e->node]];

			if (diff && !e->bucket) {
				nd->base_self = prof_add_sat(nd->base_self, e->value);
				nd->base_self_samples += e->count;
			} else {
				nd->self = prof_add_sat(nd->self, e->value);
				nd->self_samples += e->count;
			}
		}
		query_flamegraph_finish(&ref, max_nodes, min_share);
		tree_text(&ref, &b);

		if (diff) {
			struct query_diff_opts o = { .max_nodes = max_nodes,
						     .min_share = min_share };
			struct query_diff d;

			query_diff_build(&ss, &o, &d);
			tree_text(&d.fg, &a);
			query_diff_release(&d);
		} else {
			struct query_flame_opts o = { .max_nodes = max_nodes,
						      .min_share = min_share };
			struct query_flamegraph fg;

			query_flamegraph_from_stackset(&ss, &o, &fg);
			tree_text(&fg, &a);
			query_flamegraph_release(&fg);
		}
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.p, b.p, a.len);
		query_flamegraph_release(&ref);
		free(map);
		query_stackset_release(&ss);
	}
	buf_release(&a);
	buf_release(&b);
}

static void test_flamegraph_selects_by_labels_type_and_time(void **state)
{
	struct store_head *h = store_head_new();
	struct query_flamegraph fg;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	prof_init(&p, "a");
	tl_sample(&p, "main;x", 4, T0);
	tl_sample(&p, "main;y", 6, T0 + 1000);
	head_add_ok(h, &p);
	prof_init(&p, "b");
	tl_sample(&p, "main;x", 100, T0);
	head_add_ok(h, &p);
	model_profile_init(&p);
	model_sample_type_add(&p, "alloc_space", "bytes");
	p.period_type.type = model_intern(&p, "space");
	p.period_type.unit = model_intern(&p, "bytes");
	tl_sample(&p, "main;malloc", 4096, T0);
	head_add_ok(h, &p);

	build_ok(h, "{service.name=\"a\"}", 0, NULL, &fg);
	assert_int_equal(fg.total, 10);
	query_flamegraph_release(&fg);
	build_ok(h, "{service.name=~\"a|b\"}", 0, NULL, &fg);
	assert_int_equal(fg.total, 110);
	query_flamegraph_release(&fg);
	build_ok(h, "{service.name!=\"a\", process.pid=\"42\"}", 0, NULL, &fg);
	assert_int_equal(fg.total, 100);
	query_flamegraph_release(&fg);
	build_ok(h, "{service.name=\"c\"}", 0, NULL, &fg);
	assert_int_equal(fg.total, 0);
	assert_int_equal(fg.nodes.v[0].nchildren, 0);
	query_flamegraph_release(&fg);

	/* Time range: only the sample at T0 + 1000 (inclusive bounds). */
	struct query_flame_params q = {
		.type = CPU, .from_ns = T0 + 1000, .to_ns = T0 + 1000, .max_nodes = 0
	};
	prof_err_init(&err);
	assert_int_equal(build_head(h, &q, &fg, &err), 0);
	assert_int_equal(fg.total, 6);
	query_flamegraph_release(&fg);

	/* Types present, and the memory type selects its own series only. */
	struct buf types;
	buf_init(&types, 0);
	store_head_rdlock(h);
	assert_int_equal(store_head_types(h, 0, INT64_MAX, collect_type, &types), 0);
	store_head_rdunlock(h);
	assert_string_equal(types.p, "memory:alloc_space:bytes:space:bytes|" CPU "|");
	buf_release(&types);
	q.type = "memory:alloc_space:bytes:space:bytes";
	q.from_ns = 0;
	q.to_ns = INT64_MAX;
	assert_int_equal(build_head(h, &q, &fg, &err), 0);
	assert_int_equal(fg.total, 4096);
	assert_string_equal(fg.unit, "bytes");
	query_flamegraph_release(&fg);

	/* A missing type is an error naming it. */
	q.type = NULL;
	prof_err_init(&err);
	assert_int_equal(build_head(h, &q, &fg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "profile type is required"));
	query_flamegraph_release(&fg);
	store_head_free(h);
}

static void test_flamegraph_json_has_documented_shape(void **state)
{
	struct store_head *h = store_head_new();
	struct query_flamegraph fg;
	struct model_profile p;
	struct buf out;
	json_error_t jerr;

	(void)state;
	prof_init(&p, "json");
	tl_sample(&p, "main;\"quoted\\name\"", 3, T0);
	tl_sample(&p, "main", 1, T0);
	head_add_ok(h, &p);
	build_ok(h, "", 0, NULL, &fg);
	buf_init(&out, 0);
	assert_int_equal(query_flamegraph_write_json(&fg, CPU, 0, &out), 0);
	json_t *j = json_loads(out.p, 0, &jerr);
	if (!j)
		fail_msg("invalid JSON: %s: %s", jerr.text, out.p);
	assert_string_equal(json_string_value(json_object_get(j, "unit")), "nanoseconds");
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 4);
	json_t *root = json_object_get(j, "root");
	assert_string_equal(json_string_value(json_object_get(root, "name")), "total");
	assert_int_equal(json_integer_value(json_object_get(root, "total")), 4);
	json_t *main_node = json_array_get(json_object_get(root, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(main_node, "name")), "main");
	assert_int_equal(json_integer_value(json_object_get(main_node, "self")), 1);
	json_t *leaf = json_array_get(json_object_get(main_node, "children"), 0);
	assert_string_equal(json_string_value(json_object_get(leaf, "name")), "\"quoted\\name\"");
	assert_int_equal(json_array_size(json_object_get(leaf, "children")), 0);
	json_decref(j);
	buf_release(&out);
	query_flamegraph_release(&fg);
	store_head_free(h);
}

static void test_head_deduplicates_stacks_and_locations(void **state)
{
	struct store_head *h = store_head_new();
	struct store_head_stats st;
	struct model_profile p;

	(void)state;
	for (int k = 0; k < 3; k++) {
		prof_init(&p, "dedup");
		tl_sample(&p, "main;a;b", 1, T0 + k);
		tl_sample(&p, "main;a;c", 1, T0 + k);
		head_add_ok(h, &p);
	}
	store_head_get_stats(h, &st);
	assert_int_equal(st.series, 1);
	assert_int_equal(st.rows, 6);
	/* root + main + main;a + main;a;b + main;a;c */
	assert_int_equal(st.stack_nodes, 5);
	/* zero entry + main, a, b, c */
	assert_int_equal(st.locations, 5);
	assert_int_equal(st.functions, 5);
	store_head_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flamegraph_recursion_keeps_call_paths),
		cmocka_unit_test(test_flamegraph_30000_deep_stack_without_recursion),
		cmocka_unit_test(test_flamegraph_inline_chain_expands_innermost_deepest),
		cmocka_unit_test(test_flamegraph_native_frames_resolved_or_named_never_dropped),
		cmocka_unit_test(test_flamegraph_max_nodes_truncates_into_explicit_other),
		cmocka_unit_test(test_flamegraph_shape_equals_generic_tree),
		cmocka_unit_test(test_flamegraph_selects_by_labels_type_and_time),
		cmocka_unit_test(test_flamegraph_json_has_documented_shape),
		cmocka_unit_test(test_head_deduplicates_stacks_and_locations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
