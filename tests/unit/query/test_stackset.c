// SPDX-License-Identifier: Apache-2.0
/*
 * test_stackset.c - the stack set between the store and the views, and
 * the views that read one stack set: names paths (inline chains outer
 * first), groups and buckets, stack and frame filters and the runtime
 * presets (by name and by kernel frame type), the table (self/total with
 * recursion counted once, search, sort, limit, the empty stack), the
 * inverted flame graph, the sandwich (callers/callees of a recursive
 * function), truncated stacks, the folded / pprof / SVG exports (pprof
 * read back by our decoder with the same totals), and the same set from a
 * model profile (the CLI's file path).
 */
#include "unit/query/qhelp.h"

#include "format/pprof.h"
#include "query/export.h"
#include "query/filter.h"
#include "query/flamegraph.h"
#include "query/stackset_int.h"
#include "query/sandwich.h"
#include "query/selector.h"
#include "query/table.h"
#include "unit/testlib.h"

#include <pthread.h>

/* --- the set ------------------------------------------------------------------------------ */

static void test_stackset_paths_groups_buckets(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct prof_err err;

	(void)state;
	qh_init(&p, "api", false);
	/* memcpy inlined into printf, called from main: one location, two lines. */
	struct model_line lines[2] = {
		{ model_function_intern(&p, model_intern(&p, "memcpy"), 0, 0, 0), 10, 0 },
		{ model_function_intern(&p, model_intern(&p, "printf"), 0, 0, 0), 20, 0 },
	};
	uint32_t locs[2] = { tl_fn_loc(&p, "main", 4), model_location_add(&p, 0, 0x40, lines, 2) };
	tl_sample_locs(&p, locs, 2, 9, T0, NULL, 0);
	tl_sample(&p, "main;work", 5, T0 + 1500000000LL);
	tl_sample(&p, "main;work", 7, T0 + 2500000000LL);
	qh_head_add(h, &p);
	qh_init(&p, "db", false);
	tl_sample(&p, "main;work", 100, T0 + 500000000LL);
	qh_head_add(h, &p);

	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(ss.total, 121);
	assert_int_equal(ss.rows, 4);
	assert_int_equal(ss.series, 2);
	assert_string_equal(ss.unit, "nanoseconds");
	assert_true(ss.cumulative);
	assert_int_equal(qh_stack_value(&ss, "main;printf;memcpy"), 9);
	assert_int_equal(qh_stack_value(&ss, "main;work"), 112);
	/* Parents come before children. */
	for (size_t i = 1; i < ss.nodes.n; i++)
		assert_true(ss.nodes.v[i].parent < i);
	query_stackset_release(&ss);

	/* Group by service.name with 1 s steps from T0. */
	const char *gb[1] = { "service.name" };
	struct query_stackset_params q = { .type = CPU,
					   .from_ns = T0,
					   .to_ns = T0 + 3000000000LL - 1,
					   .step_ns = 1000000000LL,
					   .group_by = gb,
					   .ngroup_by = 1 };
	prof_err_init(&err);
	assert_int_equal(qh_collect_head(h, &q, &ss, &err), 0);
	assert_int_equal(ss.nbuckets, 3);
	int64_t cell[3][3] = { { 0 } }; /* [group: api, db][bucket] */
	for (size_t i = 0; i < ss.entries.n; i++) {
		const struct query_ss_entry *e = &ss.entries.v[i];
		size_t len;
		const char *v = query_stackset_group_value(&ss, e->group, 0, &len);
		int g = len == 3 && !memcmp(v, "api", 3)  ? 0
			: len == 2 && !memcmp(v, "db", 2) ? 1
							  : 2;

		cell[g][e->bucket] += e->value;
	}
	assert_int_equal(cell[0][0], 9);
	assert_int_equal(cell[0][1], 5);
	assert_int_equal(cell[0][2], 7);
	assert_int_equal(cell[1][0], 100);
	assert_int_equal(cell[1][1], 0);
	assert_int_equal(cell[2][0], 0);
	query_stackset_release(&ss);

	/* Too many steps is refused, naming the parameter. */
	q.step_ns = 1;
	prof_err_init(&err);
	assert_int_equal(qh_collect_head(h, &q, &ss, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "parameter 'step'"));
	query_stackset_release(&ss);
	/* And so is a cap on distinct cells. */
	q.step_ns = 1000000000LL;
	q.max_entries = 2;
	prof_err_init(&err);
	assert_int_equal(qh_collect_head(h, &q, &ss, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "narrow"));
	query_stackset_release(&ss);
	store_head_free(h);
}

/*
 * A series that needs no stacks (merge_stacks: one cell per group and
 * step, summed by runs of rows in one step) adds up exactly as row by
 * row: with a negative value, a sum past INT64_MAX (saturated), rows out
 * of time order, and several stacks.
 */
static void test_stackset_merged_series_sums_like_rows(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct prof_err err;
	const int64_t S = 1000000000LL;

	(void)state;
	qh_init(&p, "api", false);
	tl_sample(&p, "main;a", 5, T0 + 100);
	tl_sample(&p, "main;b", -3, T0 + 200);
	tl_sample(&p, "main;a", INT64_MAX - 1, T0 + 300);
	tl_sample(&p, "main;b", 4, T0 + 400);
	tl_sample(&p, "main;a", 7, T0 + S + 1);
	tl_sample(&p, "main;b", 2, T0 + 50); /* back in step 0 */
	tl_sample(&p, "main;a", 11, T0 + 2 * S + 5);
	tl_sample(&p, "main;a", 13, T0 + S + 2);
	qh_head_add(h, &p);
	qh_init(&p, "db", false);
	tl_sample(&p, "main;c", 100, T0 + 2 * S);
	tl_sample(&p, "main;c", 1, T0 + 2 * S + 1);
	qh_head_add(h, &p);

	const char *gb[1] = { "service.name" };
	struct query_stackset_params q = { .type = CPU,
					   .from_ns = T0,
					   .to_ns = T0 + 3 * S - 1,
					   .step_ns = S,
					   .group_by = gb,
					   .ngroup_by = 1,
					   .merge_stacks = true };
	prof_err_init(&err);
	assert_int_equal(qh_collect_head(h, &q, &ss, &err), 0);
	int64_t cell[2][3] = { { 0 } };
	uint64_t cnt[2][3] = { { 0 } };
	for (size_t i = 0; i < ss.entries.n; i++) {
		const struct query_ss_entry *e = &ss.entries.v[i];
		size_t len;
		const char *v = query_stackset_group_value(&ss, e->group, 0, &len);
		int g = len == 2 && !memcmp(v, "db", 2);

		assert_int_equal(e->node, 0);		 /* every row at the root */
		assert_int_equal(cell[g][e->bucket], 0); /* one entry per cell */
		cell[g][e->bucket] = e->value;
		cnt[g][e->bucket] = e->count;
	}
	/* 5 - 3 + (MAX - 1) saturates at MAX, and stays there */
	assert_int_equal(cell[0][0], INT64_MAX);
	assert_int_equal(cnt[0][0], 5);
	assert_int_equal(cell[0][1], 20);
	assert_int_equal(cnt[0][1], 2);
	assert_int_equal(cell[0][2], 11);
	assert_int_equal(cnt[0][2], 1);
	assert_int_equal(cell[1][0], 0);
	assert_int_equal(cell[1][1], 0);
	assert_int_equal(cell[1][2], 101);
	assert_int_equal(cnt[1][2], 2);
	assert_int_equal(ss.rows, 10);
	query_stackset_release(&ss);
	store_head_free(h);
}

static void test_stackset_filters_and_presets(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_filter f;
	struct prof_err err;

	(void)state;
	qh_init(&p, "go", false);
	tl_sample(&p, "runtime.goexit;main.main;main.handle;runtime.mallocgc", 10, T0);
	tl_sample(&p, "runtime.goexit;main.main;main.idle", 4, T0);
	tl_sample(&p, "runtime.goexit;runtime.gcBgMarkWorker;runtime.scanobject", 6, T0);
	/* A kernel frame by frame type, under a libc syscall wrapper. */
	uint32_t kfn = model_function_intern(&p, model_intern(&p, "do_sys_open"), 0, 0, 0);
	struct model_line kl = { kfn, 0, 0 };
	uint32_t kloc = model_location_add(&p, 0, 0, &kl, 1);
	p.locations.v[kloc].frame_type = model_intern(&p, "kernel");
	/* A symbolized frame of libc.so.6: hidden by its module. */
	struct model_mapping libc = { 0 };
	libc.memory_limit = UINT64_MAX;
	libc.filename = model_intern(&p, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	struct model_line ol = {
		model_function_intern(&p, model_intern(&p, "__libc_open64"), 0, 0, 0), 0, 0
	};
	uint32_t oloc = model_location_add(&p, model_mapping_add(&p, &libc), 0x1000, &ol, 1);
	uint32_t ks[3] = { tl_fn_loc(&p, "main.main", 9), oloc, kloc };
	tl_sample_locs(&p, ks, 3, 3, T0, NULL, 0);
	qh_head_add(h, &p);

	/* stack_filter keeps samples with a matching frame anywhere, reports the rest. */
	prof_err_init(&err);
	assert_int_equal(query_filter_init(&f, "^main\\.handle$", NULL, NULL, &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(ss.total, 10);
	assert_int_equal(ss.filtered_rows, 3);
	assert_int_equal(ss.filtered_value, 13);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* frame_filter hides frames; cost goes to the caller. */
	assert_int_equal(query_filter_init(&f, NULL, "mallocgc", NULL, &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(ss.total, 23);
	assert_int_equal(qh_stack_value(&ss, "runtime.goexit;main.main;main.handle"), 10);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* hide=go: every runtime.* frame goes; the GC stack collapses to the root. */
	assert_int_equal(query_filter_init(&f, NULL, NULL, "go", &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(ss.total, 23);
	assert_int_equal(qh_stack_value(&ss, "main.main;main.handle"), 10);
	assert_int_equal(qh_stack_value(&ss, "main.main;main.idle"), 4);
	assert_int_equal(qh_stack_value(&ss, ""), 6);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* hide=kernel,libc: the kernel frame by its type, the libc wrapper by its module. */
	assert_int_equal(query_filter_init(&f, NULL, NULL, "kernel,libc", &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(qh_stack_value(&ss, "main.main"), 3);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* Bad input names the parameter. */
	prof_err_init(&err);
	assert_int_equal(query_filter_init(&f, NULL, "(", NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "parameter 'frame_filter'"));
	query_filter_release(&f);
	prof_err_init(&err);
	assert_int_equal(query_filter_init(&f, NULL, NULL, "go,cobol", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown preset 'cobol'"));
	query_filter_release(&f);
	store_head_free(h);
}

/* --- interpreter presets ---------------------------------------------------------------------- */

/* A mapping of file @path (a pseudo mapping "[cpython]" too). */
static uint32_t ip_map(struct model_profile *p, const char *path)
{
	struct model_mapping m = { 0 };

	m.memory_limit = UINT64_MAX;
	m.filename = model_intern(p, path);
	return model_mapping_add(p, &m);
}

/* A location of function @name on mapping @map (0: none) with frame type @ftype (NULL: none). */
static uint32_t ip_loc(struct model_profile *p, const char *name, uint32_t map, const char *ftype)
{
	static uint64_t addr = 0x1000;
	struct model_line ln = { model_function_intern(p, model_intern(p, name), 0, 0, 0), 0, 0 };
	uint32_t l = model_location_add(p, map, map ? addr += 0x10 : 0, &ln, 1);

	if (ftype)
		p->locations.v[l].frame_type = model_intern(p, ftype);
	return l;
}

/* Parse the flame graph JSON of @ss; the index of frame type @ft in its "frame_types", or -1. */
static json_t *ip_flame_json(const struct query_stackset *ss)
{
	struct query_flame_opts o = { 0, 0, false };
	struct query_flamegraph fg;
	struct buf out;
	json_error_t jerr;

	buf_init(&out, 0);
	query_flamegraph_from_stackset(ss, &o, &fg);
	assert_int_equal(query_flamegraph_write_json(&fg, CPU, 0, &out), 0);
	json_t *j = json_loadb(out.p, out.len, 0, &jerr);
	if (!j)
		fail_msg("invalid JSON: %s: %.300s", jerr.text, out.p);
	buf_release(&out);
	query_flamegraph_release(&fg);
	return j;
}

/* The frame type of flame node @n of @j ("" when it has none). */
static const char *ip_ft(json_t *j, json_t *n)
{
	json_t *ft = n ? json_object_get(n, "ft") : NULL;

	assert_non_null(n);
	if (!ft)
		return "";
	return json_string_value(
		json_array_get(json_object_get(j, "frame_types"), (size_t)json_integer_value(ft)));
}

static void test_stackset_interpreter_presets(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_filter f;
	struct prof_err err;

	(void)state;
	qh_init(&p, "py", false);
	uint32_t py = ip_map(&p, "/usr/bin/python3.12"), cpy = ip_map(&p, "[cpython]");
	uint32_t php = ip_map(&p, "/usr/bin/php8.2"), zphp = ip_map(&p, "[php]");
	uint32_t rb = ip_map(&p, "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1");
	uint32_t node = ip_map(&p, "/usr/bin/node");
	uint32_t main_ = ip_loc(&p, "main", py, NULL), runmain = ip_loc(&p, "Py_RunMain", py, NULL),
		 eval = ip_loc(&p, "_PyEval_EvalFrameDefault", py, "native"),
		 work_a = ip_loc(&p, "work_a", cpy, "cpython"),
		 spin = ip_loc(&p, "spin", cpy, "cpython"),
		 pymalloc = ip_loc(&p, "PyObject_Malloc", py, NULL),
		 vcall = ip_loc(&p, "_PyObject_Vectorcall", py, NULL);

	/* main -> Py_RunMain -> _PyEval_EvalFrameDefault -> work_a -> spin -> PyObject_Malloc */
	uint32_t s1[] = { main_, runmain, eval, work_a, spin, pymalloc };
	tl_sample_locs(&p, s1, 6, 10, T0, NULL, 0);
	/* work_a calls spin through the call machinery; spin's own time. */
	uint32_t s2[] = { main_, runmain, eval, work_a, vcall, eval, spin };
	tl_sample_locs(&p, s2, 7, 5, T0, NULL, 0);
	/* Natives known by name only (no mapping): main is not CPython's. */
	uint32_t s3[] = { tl_fn_loc(&p, "main", 4), tl_fn_loc(&p, "Py_RunMain", 10),
			  tl_fn_loc(&p, "_PyEval_EvalFrameDefault", 24),
			  ip_loc(&p, "work_b", cpy, "cpython") };
	tl_sample_locs(&p, s3, 4, 3, T0, NULL, 0);
	/* An interpreted frame on the interpreter's own file, named like an internal. */
	uint32_t s4[] = { main_, ip_loc(&p, "run_mod", py, "cpython") };
	tl_sample_locs(&p, s4, 2, 2, T0, NULL, 0);
	/* PHP: user functions named execute and execute_ex stay. */
	uint32_t s5[] = { ip_loc(&p, "main", php, NULL),
			  ip_loc(&p, "php_execute_script", php, NULL),
			  ip_loc(&p, "zend_execute", php, NULL),
			  ip_loc(&p, "execute_ex", php, NULL),
			  ip_loc(&p, "execute", zphp, "php"),
			  ip_loc(&p, "execute_ex", zphp, "php"),
			  ip_loc(&p, "ZEND_DO_FCALL_SPEC_RETVAL_USED_HANDLER", php, NULL) };
	tl_sample_locs(&p, s5, 7, 7, T0, NULL, 0);
	/* Ruby and Node.js. */
	uint32_t s6[] = { ip_loc(&p, "ruby_run_node", rb, NULL),
			  ip_loc(&p, "vm_exec_core", rb, NULL),
			  ip_loc(&p, "Object#foo", ip_map(&p, "[ruby]"), "ruby"),
			  ip_loc(&p, "vm_call_cfunc", rb, NULL) };
	tl_sample_locs(&p, s6, 4, 4, T0, NULL, 0);
	uint32_t s7[] = { ip_loc(&p, "node::Start", node, NULL),
			  ip_loc(&p, "v8::internal::Execution::Call", node, NULL),
			  ip_loc(&p, "Builtins_JSEntry", node, NULL),
			  ip_loc(&p, "handler /app/x.js:3", ip_map(&p, "[v8js]"), "v8js") };
	tl_sample_locs(&p, s7, 4, 6, T0, NULL, 0);
	qh_head_add(h, &p);

	/* Unfiltered (the translation cache): every frame, frame types in the flame JSON. */
	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(qh_stack_value(&ss, "main;Py_RunMain;_PyEval_EvalFrameDefault;work_a;spin;"
					     "PyObject_Malloc"),
			 10);
	json_t *j = ip_flame_json(&ss);
	json_t *r = json_object_get(j, "root");
	assert_string_equal(ip_ft(j, qh_path(r, "main;Py_RunMain;_PyEval_EvalFrameDefault;work_a")),
			    "cpython");
	assert_string_equal(ip_ft(j, qh_path(r, "main;Py_RunMain;_PyEval_EvalFrameDefault")),
			    "native");
	assert_string_equal(ip_ft(j, qh_path(r, "main;Py_RunMain")), "");
	/* A name has one type, its first record's: execute_ex is the engine's here. */
	assert_string_equal(ip_ft(j, qh_path(r, "main;php_execute_script;zend_execute;execute_ex;"
						"execute")),
			    "php");
	assert_string_equal(ip_ft(j, r), "");
	json_decref(j);
	query_stackset_release(&ss);

	/* hide=python: work_a and spin stay, the internals' cost goes to their callers. */
	prof_err_init(&err);
	assert_int_equal(query_filter_init(&f, NULL, NULL, "python", &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(ss.total, 37);
	assert_int_equal(qh_stack_value(&ss, "work_a;spin"), 15);
	assert_int_equal(qh_stack_value(&ss, "main;work_b"), 3);
	assert_int_equal(qh_stack_value(&ss, "run_mod"), 2);
	assert_int_equal(qh_stack_value(&ss,
					"main;php_execute_script;zend_execute;execute_ex;execute;"
					"execute_ex;ZEND_DO_FCALL_SPEC_RETVAL_USED_HANDLER"),
			 7);
	/* The flame JSON of a filtered set (the uncached path) has the types too. */
	j = ip_flame_json(&ss);
	assert_string_equal(ip_ft(j, qh_path(json_object_get(j, "root"), "work_a;spin")),
			    "cpython");
	json_decref(j);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* hide=php: the Zend engine goes, the user's execute and execute_ex stay. */
	assert_int_equal(query_filter_init(&f, NULL, NULL, "php", &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(qh_stack_value(&ss, "execute;execute_ex"), 7);
	assert_int_equal(qh_stack_value(&ss, "work_a;spin"), -1); /* not CPython's business */
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* hide=ruby,node,libc: the same for CRuby and Node.js. */
	assert_int_equal(query_filter_init(&f, NULL, NULL, "ruby,node,libc", &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(qh_stack_value(&ss, "Object#foo"), 4);
	assert_int_equal(qh_stack_value(&ss, "handler /app/x.js:3"), 6);
	query_stackset_release(&ss);
	query_filter_release(&f);

	/* Names alone, no frame type, no mapping: the name regexes. */
	assert_true(!query_filter_init(&f, NULL, NULL, "python,ruby,php,node", &err));
	assert_true(query_filter_hides(&f, "_PyEval_EvalFrameDefault", 24, NULL, NULL));
	assert_true(query_filter_hides(&f, "ZEND_ASSIGN_SPEC_CV_CONST_HANDLER", 33, "native", ""));
	assert_true(query_filter_hides(&f, "v8::internal::Invoke", 20, NULL, NULL));
	assert_true(query_filter_hides(&f, "foo", 3, NULL, "libpython3.12.so.1.0"));
	assert_false(query_filter_hides(&f, "execute_ex", 10, "php", "php8.2"));
	assert_false(query_filter_hides(&f, "vm_exec_core", 12, "ruby", NULL));
	assert_false(query_filter_hides(&f, "main", 4, NULL, "libc.so.6"));
	assert_false(query_filter_hides(&f, "work", 4, "cpython", "[cpython]"));
	/* Node.js's own JavaScript (files node:*, on the agent's [v8js:node] mapping). */
	assert_true(query_filter_hides(&f, "processTicksAndRejections", 25, "v8js", "[v8js:node]"));
	assert_false(query_filter_hides(&f, "hotLoop", 7, "v8js", "[v8js]"));
	query_filter_release(&f);
	assert_true(!query_filter_init(&f, NULL, NULL, "jvm", &err));
	assert_false(
		query_filter_hides(&f, "processTicksAndRejections", 25, "v8js", "[v8js:node]"));
	assert_true(query_filter_hides(&f, "java.util.ArrayList.get", 23, "jvm", "[jvm]"));
	assert_false(query_filter_hides(&f, "Hot.work", 8, "jvm", "[jvm]"));
	query_filter_release(&f);
	store_head_free(h);
}

/* --- table ----------------------------------------------------------------------------------- */

static void test_table_recursion_counted_once(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_table t;
	struct query_table_opts o = { 0 };
	struct prof_err err;

	(void)state;
	qh_init(&p, "rec", false);
	tl_sample(&p, "A;B;A;D", 10, T0);
	tl_sample(&p, "A;B", 5, T0);
	tl_sample(&p, "A;D", 2, T0);
	tl_sample(&p, "A;A;A", 3, T0); /* self-recursion */
	tl_sample(&p, "", 4, T0);      /* an empty stack: grand total only */
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(ss.total, 24);

	prof_err_init(&err);
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	assert_int_equal(t.total, 24);
	qh_expect_row(&t, &ss, "A", 3, 20);
	qh_expect_row(&t, &ss, "B", 5, 15);
	qh_expect_row(&t, &ss, "D", 12, 12);
	assert_int_equal(t.nrows, 3);
	/* Sorted by self: D (12), B (5), A (3). */
	assert_string_equal(ss.names.s[t.rows[0].name], "D");
	assert_string_equal(ss.names.s[t.rows[2].name], "A");
	assert_int_equal(t.rows[1].total_samples, 2);
	query_table_release(&t);

	o.sort = QUERY_SORT_TOTAL;
	o.limit = 1;
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	assert_int_equal(t.nrows, 1);
	assert_int_equal(t.nrows_matched, 3);
	assert_string_equal(ss.names.s[t.rows[0].name], "A");
	query_table_release(&t);

	o.sort = QUERY_SORT_NAME;
	o.limit = 0;
	o.search = "B|D";
	o.search_regex = true;
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	assert_int_equal(t.nrows, 2);
	assert_string_equal(ss.names.s[t.rows[0].name], "B");
	query_table_release(&t);
	o.search_regex = false; /* substring: no row contains "B|D" */
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	assert_int_equal(t.nrows, 0);
	query_table_release(&t);
	o.search = "[";
	o.search_regex = true;
	prof_err_init(&err);
	assert_int_equal(query_table_build(&ss, &o, &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "parameter 'search'"));
	query_table_release(&t);
	query_stackset_release(&ss);
	store_head_free(h);
}

/* --- flame graph inverted, sandwich, truncated stacks ----------------------------------------- */

static uint32_t fg_find(const struct query_flamegraph *fg, const char *path)
{
	uint32_t at = 0;

	for (const char *s = path; *s;) {
		size_t k = strcspn(s, ";");
		const struct query_flame_node *nd = &fg->nodes.v[at];
		uint32_t next = UINT32_MAX;

		for (uint32_t c = 0; c < nd->nchildren; c++) {
			uint32_t ch = fg->children.v[nd->child_off + c];
			const char *nm = strtab_get(&fg->names, fg->nodes.v[ch].name);

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

static void expect_fg(const struct query_flamegraph *fg, const char *path, int64_t self,
		      int64_t total)
{
	uint32_t id = fg_find(fg, path);

	if (id == UINT32_MAX)
		fail_msg("no node %s", path);
	if (fg->nodes.v[id].self != self || fg->nodes.v[id].total != total)
		fail_msg("%s: self %lld total %lld, want %lld %lld", path,
			 (long long)fg->nodes.v[id].self, (long long)fg->nodes.v[id].total,
			 (long long)self, (long long)total);
}

static void test_flamegraph_inverted_and_sandwich(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_flamegraph fg;
	struct query_flame_opts o = { 0, 0, true };
	struct query_sandwich sw;

	(void)state;
	qh_init(&p, "inv", false);
	tl_sample(&p, "main;A;B;A;D", 10, T0);
	tl_sample(&p, "main;A;B", 5, T0);
	tl_sample(&p, "main;C;D", 2, T0);
	tl_sample(&p, "main;A", 1, T0);
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);

	query_flamegraph_from_stackset(&ss, &o, &fg);
	assert_int_equal(fg.total, 18);
	assert_true(fg.inverted);
	expect_fg(&fg, "D", 0, 12);
	expect_fg(&fg, "D;A", 0, 10);
	expect_fg(&fg, "D;A;B;A;main", 10, 10);
	expect_fg(&fg, "D;C;main", 2, 2);
	expect_fg(&fg, "B", 0, 5);
	expect_fg(&fg, "A;main", 1, 1);
	/* Leaves first: the root's children are the self-bearing functions. */
	assert_int_equal(fg.nodes.v[0].nchildren, 3);
	query_flamegraph_release(&fg);

	/* Sandwich of A: one count per stack, split at the outermost A. */
	query_sandwich_build(&ss, "A", 0, &sw);
	assert_true(sw.found);
	assert_int_equal(sw.total, 16);
	assert_int_equal(sw.self, 1);
	assert_int_equal(sw.callers.nodes.v[0].total, 16);
	assert_int_equal(sw.callees.nodes.v[0].total, 16);
	expect_fg(&sw.callers, "main", 16, 16);
	expect_fg(&sw.callees, "B", 5, 15);
	expect_fg(&sw.callees, "B;A;D", 10, 10);
	assert_int_equal(sw.callees.nodes.v[0].self, 1);
	query_sandwich_release(&sw);
	query_sandwich_build(&ss, "nope", 0, &sw);
	assert_false(sw.found);
	assert_int_equal(sw.callees.nodes.v[0].total, 0);
	query_sandwich_release(&sw);
	query_stackset_release(&ss);
	store_head_free(h);
}

/* --- folding ---------------------------------------------------------------------------------- */

/* Node for @path (";"-separated, root first) in @ss, created. */
static uint32_t fold_path(struct query_stackset *ss, const char *path)
{
	uint32_t at = 0;

	for (const char *s = path; *s;) {
		size_t k = strcspn(s, ";");

		at = query_stackset_child(ss, at, query_stackset_name(ss, s, k));
		s += k + (s[k] == ';');
	}
	return at;
}

static void fold_expect(struct query_stackset *ss, const char *path, int64_t self)
{
	struct query_flamegraph fg;
	struct query_flame_opts o = { 0 };

	query_flamegraph_from_stackset(ss, &o, &fg);
	uint32_t id = fg_find(&fg, path);

	if (id == UINT32_MAX)
		fail_msg("no node %s", path);
	if (fg.nodes.v[id].self != self)
		fail_msg("%s: self %lld, want %lld", path, (long long)fg.nodes.v[id].self,
			 (long long)self);
	query_flamegraph_release(&fg);
}

static void fold_build(struct query_stackset *ss)
{
	query_stackset_init(ss);
	ss->nbuckets = 2;
	/* main -> qsort -> msort x3 -> cmp (cmp in the executable, the rest in libc) */
	assert_int_equal(query_stackset_add(ss, fold_path(ss, "main;qsort;msort;msort;msort;cmp"),
					    0, 0, 70, 7, 70),
			 0);
	assert_int_equal(
		query_stackset_add(ss, fold_path(ss, "main;qsort;msort;msort"), 0, 1, 20, 2, 20),
		0);
	assert_int_equal(query_stackset_add(ss, fold_path(ss, "main;qsort;msort"), 0, 0, 5, 1, 5),
			 0);
	assert_int_equal(query_stackset_add(ss, fold_path(ss, "main;main;work"), 0, 0, 3, 1, 3), 0);
	assert_int_equal(
		query_stackset_add(ss, fold_path(ss, "main;read;sys_read;vfs_read"), 0, 0, 2, 1, 2),
		0);
	ss_srcloc_note(ss, query_stackset_name(ss, "main", 4), "a.c", 1, "", "/bin/app", "");
	ss_srcloc_note(ss, query_stackset_name(ss, "cmp", 3), "a.c", 9, "", "/bin/app", "");
	ss_srcloc_note(ss, query_stackset_name(ss, "qsort", 5), "", 0, "", "/lib/libc.so.6", "");
	ss_srcloc_note(ss, query_stackset_name(ss, "msort", 5), "", 0, "", "/lib/libc.so.6", "");
	ss_srcloc_note(ss, query_stackset_name(ss, "read", 4), "", 0, "", "/lib/libc.so.6", "");
	ss_srcloc_note(ss, query_stackset_name(ss, "sys_read", 8), "", 0, "", "", "kernel");
	ss_srcloc_note(ss, query_stackset_name(ss, "vfs_read", 8), "", 0, "", "", "kernel");
}

static void test_stackset_fold_recursion_and_library(void **state)
{
	struct query_stackset ss;
	struct prof_err err;
	unsigned how;
	int64_t self_a = 0, self_b = 0;

	(void)state;
	fold_build(&ss);
	size_t before = ss.nodes.n;
	query_stackset_fold(&ss, 0);
	assert_int_equal(ss.nodes.n, before);

	query_stackset_fold(&ss, QUERY_FOLD_RECURSION);
	assert_int_equal(ss.total, 100);
	assert_int_equal(ss.rows, 12);
	fold_expect(&ss, "main;qsort;msort;cmp", 70);
	fold_expect(&ss, "main;qsort;msort", 25); /* 20 (B) + 5 (A): one node, two buckets */
	fold_expect(&ss, "main;work", 3);
	{
		struct query_flamegraph fg;
		struct query_flame_opts fo = { 0 };

		query_flamegraph_from_stackset(&ss, &fo, &fg);
		assert_int_equal(fg_find(&fg, "main;qsort;msort;msort"), UINT32_MAX);
		query_flamegraph_release(&fg);
	}
	assert_int_equal(ss.entries.n, 5); /* msort: one entry per bucket */
	for (size_t i = 0; i < ss.entries.n; i++)
		*(ss.entries.v[i].bucket ? &self_b : &self_a) += ss.entries.v[i].value;
	assert_int_equal(self_a, 80);
	assert_int_equal(self_b, 20);
	for (size_t i = 1; i < ss.nodes.n; i++)
		assert_true(ss.nodes.v[i].parent < i);
	query_stackset_release(&ss);

	/* The library: qsort's run of libc frames is qsort; cmp (the executable) stays. */
	fold_build(&ss);
	query_stackset_fold(&ss, QUERY_FOLD_LIBRARY);
	assert_int_equal(ss.total, 100);
	fold_expect(&ss, "main;qsort;cmp", 70);
	fold_expect(&ss, "main;qsort", 25);
	fold_expect(&ss, "main;main;work", 3);	   /* the executable is no library */
	fold_expect(&ss, "main;read;sys_read", 2); /* libc then the kernel: two libraries */
	query_stackset_release(&ss);

	prof_err_init(&err);
	assert_int_equal(query_fold_parse("recursion,library", &how, &err), 0);
	assert_int_equal(how, QUERY_FOLD_RECURSION | QUERY_FOLD_LIBRARY);
	assert_int_equal(query_fold_parse("none", &how, &err), 0);
	assert_int_equal(how, 0);
	assert_int_equal(query_fold_parse("recursion,x", &how, &err), -EINVAL);
	assert_string_equal(err.msg, "parameter 'fold': unknown value 'x' (known: recursion, "
				     "library, recursion,library, none)");
}

static void test_truncated_stacks_stay_their_own_roots(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_flamegraph fg;
	struct query_flame_opts o = { 0 };
	struct query_table t;
	struct query_table_opts to = { 0 };
	struct prof_err err;

	(void)state;
	/* An unwinder gave up: the second stack lost its outer frames (main;run). */
	qh_init(&p, "trunc", false);
	tl_sample(&p, "main;run;parse;lex", 6, T0);
	tl_sample(&p, "parse;lex", 4, T0);
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);
	query_flamegraph_from_stackset(&ss, &o, &fg);
	expect_fg(&fg, "main;run;parse;lex", 6, 6);
	expect_fg(&fg, "parse;lex", 4, 4);
	assert_int_equal(fg.total, 10);
	query_flamegraph_release(&fg);
	prof_err_init(&err);
	assert_int_equal(query_table_build(&ss, &to, &t, &err), 0);
	qh_expect_row(&t, &ss, "lex", 10, 10);
	qh_expect_row(&t, &ss, "parse", 0, 10);
	qh_expect_row(&t, &ss, "main", 0, 6);
	query_table_release(&t);
	query_stackset_release(&ss);
	store_head_free(h);
}

/* --- exports ---------------------------------------------------------------------------------- */

static void test_exports_folded_pprof_svg(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p, back;
	struct query_stackset ss;
	struct buf out;
	struct prof_err err;

	(void)state;
	qh_init(&p, "exp", false);
	tl_sample(&p, "main;a;b", 3, T0);
	tl_sample(&p, "main;we;ird", 2, T0);
	tl_sample(&p, "main;a", 1, T0);
	tl_sample(&p, "main;a;b", 4, T0);
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);

	buf_init(&out, 0);
	assert_int_equal(query_export_folded(&ss, &out), 0);
	/* Stack-set order: a stack's prefix comes before it. */
	assert_string_equal(out.p, "main;a 1\nmain;a;b 7\nmain;we;ird 2\n");
	buf_reset(&out);

	assert_int_equal(query_export_pprof(&ss, true, &out, &err), 0);
	model_profile_init(&back);
	prof_err_init(&err);
	assert_int_equal(fmt_pprof_decode(out.p, out.len, 0, &back, &err), 0);
	assert_int_equal(back.sample_types.n, 1);
	assert_string_equal(model_str(&back, back.sample_types.v[0].type), "cpu");
	assert_string_equal(model_str(&back, back.sample_types.v[0].unit), "nanoseconds");
	int64_t sum = 0;
	for (size_t i = 0; i < back.samples.n; i++)
		sum += back.values.v[back.samples.v[i].value_off];
	assert_int_equal(sum, 10);
	assert_int_equal(back.samples.n, 3);
	/* Read back into a stack set: the same table. */
	struct query_stackset ss2;
	struct query_stackset_params q = { 0 };
	assert_int_equal(query_stackset_from_profile(&back, 0, &q, &ss2, &err), 0);
	assert_int_equal(ss2.total, 10);
	assert_string_equal(ss2.type, CPU);
	query_stackset_release(&ss2);
	model_profile_release(&back);
	buf_reset(&out);

	struct query_flamegraph fg;
	struct query_flame_opts o = { 0 };
	struct query_svg_opts so = { "t<1>", NULL, 800 };
	query_flamegraph_from_stackset(&ss, &o, &fg);
	assert_int_equal(query_export_svg(&fg, CPU, &so, &out), 0);
	assert_non_null(strstr(out.p, "<svg "));
	assert_non_null(strstr(out.p, "t&lt;1&gt;"));
	assert_non_null(strstr(out.p, "data-n=\"main\""));
	assert_non_null(strstr(out.p, "data-n=\"b\""));
	assert_non_null(strstr(out.p, "</svg>"));
	/* 6 frames: total, main, a, b, we, ird. */
	size_t ng = 0;
	for (const char *s = out.p; (s = strstr(s, "<g class=\"f\"")); s++)
		ng++;
	assert_int_equal(ng, 6);
	query_flamegraph_release(&fg);
	buf_release(&out);
	query_stackset_release(&ss);
	store_head_free(h);
}

/* --- unsymbolized frames: pprof's function granularity, addresses kept in exports ------------ */

static void test_unsymbolized_frames_granularity_and_export(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p, back;
	struct query_stackset ss;
	struct query_table t;
	struct query_table_opts o = { 0 };
	struct buf out;
	struct prof_err err;

	(void)state;
	qh_init(&p, "raw", false);
	struct model_mapping lib = { 0 };
	lib.memory_limit = UINT64_MAX;
	lib.filename = model_intern(&p, "/nonexistent/libfoo.so.1");
	uint32_t ml = model_mapping_add(&p, &lib);
	uint32_t a1 = model_location_add(&p, ml, 0x10, NULL, 0);
	uint32_t a2 = model_location_add(&p, ml, 0x20, NULL, 0);
	uint32_t bare = model_location_add(&p, 0, 0x99, NULL, 0);
	uint32_t m = tl_fn_loc(&p, "main", 4);
	uint32_t s1[3] = { m, a1, a2 }, s2[2] = { m, a2 }, s3[2] = { m, bare };
	tl_sample_locs(&p, s1, 3, 5, T0, NULL, 0);
	tl_sample_locs(&p, s2, 2, 3, T0, NULL, 0);
	tl_sample_locs(&p, s3, 2, 1, T0, NULL, 0);
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(ss.unsymbolized, 3);
	assert_int_equal(qh_stack_value(&ss, "main;libfoo.so.1+0x10;libfoo.so.1+0x20"), 5);

	/* Function granularity (pprof -top): both addresses are "[libfoo.so.1]", once per stack. */
	prof_err_init(&err);
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	qh_expect_row(&t, &ss, "[libfoo.so.1]", 8, 8);
	qh_expect_row(&t, &ss, "<unknown>", 1, 1);
	qh_expect_row(&t, &ss, "main", 0, 9);
	assert_int_equal(t.nrows, 3);
	query_table_release(&t);
	/* Frame granularity: every address its own row. */
	o.by_frame = true;
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	qh_expect_row(&t, &ss, "libfoo.so.1+0x20", 8, 8);
	qh_expect_row(&t, &ss, "libfoo.so.1+0x10", 0, 5);
	qh_expect_row(&t, &ss, "0x99", 1, 1);
	query_table_release(&t);

	/* The pprof export keeps the addresses (and the mapping), not made-up functions. */
	buf_init(&out, 0);
	assert_int_equal(query_export_pprof(&ss, false, &out, &err), 0);
	model_profile_init(&back);
	assert_int_equal(fmt_pprof_decode(out.p, out.len, 0, &back, &err), 0);
	size_t nraw = 0;
	for (size_t i = 1; i < back.locations.n; i++) {
		const struct model_location *l = &back.locations.v[i];

		if (!l->nlines) {
			nraw++;
			assert_true(l->address == 0x10 || l->address == 0x20 || l->address == 0x99);
			if (l->address != 0x99)
				assert_string_equal(
					model_str(&back, back.mappings.v[l->mapping].filename),
					"/nonexistent/libfoo.so.1");
		}
	}
	assert_int_equal(nraw, 3);
	model_profile_release(&back);
	buf_release(&out);
	query_stackset_release(&ss);
	store_head_free(h);
}

/* --- from a profile, with per-sample labels ---------------------------------------------------- */

static void test_stackset_from_profile_groups_by_sample_labels(void **state)
{
	struct model_profile p;
	struct query_stackset ss;
	struct prof_err err;
	const char *gb[1] = { "thread.name" };
	struct query_stackset_params q = { .group_by = gb, .ngroup_by = 1, .keep_samples = true };

	(void)state;
	qh_init(&p, NULL, false);
	struct model_label l1 = { model_intern(&p, "thread.name"), model_intern(&p, "worker"), 0,
				  0 };
	struct model_label l2 = { model_intern(&p, "thread.name"), model_intern(&p, "io"), 0, 0 };
	uint32_t s1[2] = { tl_fn_loc(&p, "main", 4), tl_fn_loc(&p, "work", 4) };
	tl_sample_locs(&p, s1, 2, 10, T0 + 2, &l1, 1);
	tl_sample_locs(&p, s1, 2, 10, T0 + 1, &l1, 1);
	tl_sample_locs(&p, s1, 1, 5, T0, &l2, 1);
	prof_err_init(&err);
	assert_int_equal(query_stackset_from_profile(&p, 0, &q, &ss, &err), 0);
	assert_int_equal(ss.total, 25);
	assert_int_equal(ss.samples.n, 3);
	/* Samples sorted by (group, time). */
	assert_int_equal(ss.samples.v[0].group, ss.samples.v[1].group);
	assert_true(ss.samples.v[0].ts_ns < ss.samples.v[1].ts_ns);
	size_t len;
	const char *v = query_stackset_group_value(&ss, ss.samples.v[2].group, 0, &len);
	assert_int_equal(len, 2);
	assert_memory_equal(v, "io", 2);
	query_stackset_release(&ss);
	assert_int_equal(query_stackset_from_profile(&p, 3, &q, &ss, &err), -EINVAL);
	query_stackset_release(&ss);
	model_profile_release(&p);
}

/* --- deep stacks through every view, on a small thread stack ---------------------------------- */

#define DEEP 30000

struct deep_job {
	struct store_head *h;
	int rc;
	size_t len;
};

static void *deep_views(void *arg)
{
	struct deep_job *j = arg;
	static const char *views[] = { "flamegraph",	"table",      "sandwich",
				       "export_folded", "export_svg", "export_pprof" };
	struct buf out;
	struct prof_err err;

	buf_init(&out, 0);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(views) && !j->rc; i++) {
		struct qh_args a = { { "type", CPU, "from", "0", "to", "now", "function", "r",
				       "invert", i == 0 ? "true" : "false", NULL } };

		j->rc = qh_run(j->h, views[i], &a, &out, NULL, &err);
		j->len += out.len;
	}
	buf_release(&out);
	return NULL;
}

static void test_views_30000_deep_on_a_small_stack(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	uint32_t *locs = xcalloc(DEEP, sizeof(uint32_t));

	(void)state;
	qh_init(&p, "deep", false);
	uint32_t r = tl_fn_loc(&p, "r", 1), m = tl_fn_loc(&p, "m", 1);
	for (uint32_t i = 0; i < DEEP; i++)
		locs[i] = i % 2 ? r : m;
	tl_sample_locs(&p, locs, DEEP, 3, T0, NULL, 0);
	free(locs);
	qh_head_add(h, &p);

	struct deep_job j = { h, 0, 0 };
	pthread_attr_t attr;
	pthread_t th;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	assert_int_equal(pthread_create(&th, &attr, deep_views, &j), 0);
	pthread_join(th, NULL);
	pthread_attr_destroy(&attr);
	assert_int_equal(j.rc, 0);
	assert_true(j.len > DEEP);
	store_head_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stackset_paths_groups_buckets),
		cmocka_unit_test(test_stackset_merged_series_sums_like_rows),
		cmocka_unit_test(test_stackset_filters_and_presets),
		cmocka_unit_test(test_stackset_interpreter_presets),
		cmocka_unit_test(test_table_recursion_counted_once),
		cmocka_unit_test(test_flamegraph_inverted_and_sandwich),
		cmocka_unit_test(test_stackset_fold_recursion_and_library),
		cmocka_unit_test(test_truncated_stacks_stay_their_own_roots),
		cmocka_unit_test(test_exports_folded_pprof_svg),
		cmocka_unit_test(test_unsymbolized_frames_granularity_and_export),
		cmocka_unit_test(test_stackset_from_profile_groups_by_sample_labels),
		cmocka_unit_test(test_views_30000_deep_on_a_small_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
