// SPDX-License-Identifier: Apache-2.0
/*
 * test_cpuprofile.c - V8 .cpuprofile: the node tree to stacks, time per
 * sample (time to the next sample, last 0, us -> ns), "(anonymous)" for
 * empty names, 0-based lines made 1-based, hitCount-only profiles, and
 * each bad-input kind with its exact error: duplicate ids, cycles, two
 * parents, unknown ids, mismatched arrays, unsupported layouts, a stack
 * budget overflow.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/cpuprofile.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

static const char *frame(const struct model_profile *p, size_t s, uint32_t k)
{
	static char tmp[256];
	const struct model_sample *sm = &p->samples.v[s];
	const struct model_location *loc = &p->locations.v[p->stack_locs.v[sm->stack_off + k]];

	return model_frame_name(p, loc, 0, tmp, sizeof(tmp));
}

static int decode(const char *text, struct model_profile *p, struct prof_err *err)
{
	model_profile_init(p);
	prof_err_init(err);
	return fmt_cpuprofile_decode(text, strlen(text), NULL, p, err);
}

#define NODE(id, name, line, children)                                                             \
	"{\"id\":" #id ",\"callFrame\":{\"functionName\":\"" name "\",\"scriptId\":\"1\",\"url\":" \
	"\"file:///w.js\",\"lineNumber\":" #line ",\"columnNumber\":4},\"children\":[" children    \
	"]}"

static const char simple[] =
	"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\",\"scriptId\":\"0\",\"url\":"
	"\"\",\"lineNumber\":-1,\"columnNumber\":-1},\"children\":[2]}," NODE(
		2, "", 0, "3") "," NODE(3, "main", 9,
					"4,5") "," NODE(4, "hot", 19,
							"") "," NODE(5, "cold", 29,
								     "") "],"
									 "\"startTime\":1000,"
									 "\"endTime\":2000,"
									 "\"samples\":[4,4,5,"
									 "3],"
									 "\"timeDeltas\":[10,"
									 "100,250,40]}";

static void test_cpuprofile_stacks_times_names(void **state)
{
	struct model_profile p;
	struct prof_err err;
	const struct model_location *l;
	const struct model_function *f;

	(void)state;
	assert_int_equal(decode(simple, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.samples.n, 4);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "samples");
	assert_string_equal(model_str(&p, p.sample_types.v[1].type), "wall");
	assert_string_equal(model_str(&p, p.sample_types.v[1].unit), "nanoseconds");
	assert_string_equal(model_str(&p, p.name), "wall");
	/* Stack of sample 0: hot, main, (anonymous), (root). */
	assert_int_equal(p.samples.v[0].nstack, 4);
	assert_string_equal(frame(&p, 0, 0), "hot");
	assert_string_equal(frame(&p, 0, 1), "main");
	assert_string_equal(frame(&p, 0, 2), "(anonymous)");
	assert_string_equal(frame(&p, 0, 3), "(root)");
	assert_int_equal(p.samples.v[0].stack_off, p.samples.v[1].stack_off);
	/* Times: each sample is worth the time to the next one; the last 0. */
	assert_int_equal(p.values.v[1], 100000);
	assert_int_equal(p.values.v[3], 250000);
	assert_int_equal(p.values.v[5], 40000);
	assert_int_equal(p.values.v[7], 0);
	assert_int_equal(p.samples.v[0].timestamp_ns, 1010000);
	assert_int_equal(p.samples.v[3].timestamp_ns, 1400000);
	assert_int_equal(p.duration_ns, 1000000);
	assert_int_equal(p.period, 130000);
	/* 0-based protocol lines become 1-based; url is the file. */
	l = &p.locations.v[p.stack_locs.v[p.samples.v[0].stack_off]];
	f = &p.functions.v[p.lines.v[l->line_off].function];
	assert_string_equal(model_str(&p, f->filename), "file:///w.js");
	assert_int_equal(f->start_line, 20);
	assert_int_equal(p.lines.v[l->line_off].column, 5);
	assert_string_equal(model_str(&p, l->frame_type), "v8js");
	/* (root) is synthetic: no frame type. */
	l = &p.locations.v[p.stack_locs.v[p.samples.v[0].stack_off + 3]];
	assert_int_equal(l->frame_type, 0);
	model_profile_release(&p);
}

/* The pre-2016 layout of the profile above: nested "head", seconds, timestamps. */
#define OLD(id, name, line, children)                                                              \
	"{\"id\":" #id ",\"functionName\":\"" name "\",\"scriptId\":\"1\",\"url\":"                \
	"\"file:///w.js\",\"lineNumber\":" #line ",\"columnNumber\":5,\"hitCount\":0,\"children\"" \
	":[" children "]}"

static const char old_simple[] =
	"{\"head\":{\"id\":1,\"functionName\":\"(root)\",\"scriptId\":\"0\",\"url\":\"\","
	"\"lineNumber\":0,\"columnNumber\":0,\"children\":[" OLD(
		2, "", 1,
		OLD(3, "main", 10,
		    OLD(4, "hot", 20, "") "," OLD(
			    5, "cold", 30,
			    ""))) "]},"
				  "\"startTime\":0.001,\"endTime\":0.002,\"samples\":[4,4,5,3],"
				  "\"timestamps\":[1010,1110,1360,1400]}";

static void test_cpuprofile_pre2016_head_layout_reads_alike(void **state)
{
	struct model_profile a, b;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode(simple, &a, &err), 0);
	if (decode(old_simple, &b, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(model_profile_validate(&b, &err), 0);
	assert_int_equal(b.samples.n, a.samples.n);
	assert_int_equal(b.duration_ns, a.duration_ns);
	assert_int_equal(b.period, a.period);
	for (size_t i = 0; i < a.samples.n; i++) {
		const struct model_sample *sa = &a.samples.v[i], *sb = &b.samples.v[i];

		assert_int_equal(sb->nstack, sa->nstack);
		assert_int_equal(sb->timestamp_ns, sa->timestamp_ns);
		assert_int_equal(b.values.v[sb->value_off + 1], a.values.v[sa->value_off + 1]);
		for (uint32_t k = 0; k < sa->nstack; k++) {
			const struct model_location *la =
				&a.locations.v[a.stack_locs.v[sa->stack_off + k]];
			const struct model_location *lb =
				&b.locations.v[b.stack_locs.v[sb->stack_off + k]];
			char fa[64];

			snprintf(fa, sizeof(fa), "%s", frame(&a, i, k));
			assert_string_equal(frame(&b, i, k), fa);
			assert_int_equal(b.lines.v[lb->line_off].line,
					 a.lines.v[la->line_off].line);
			assert_int_equal(b.lines.v[lb->line_off].column,
					 a.lines.v[la->line_off].column);
		}
	}
	model_profile_release(&a);
	model_profile_release(&b);

	/* No ids, no samples: the hit counts of the tree. */
	assert_int_equal(decode("{\"head\":{\"functionName\":\"(root)\",\"children\":[{"
				"\"functionName\":\"f\",\"hitCount\":3,\"children\":[{"
				"\"functionName\":\"g\",\"hitCount\":4}]}]}}",
				&b, &err),
			 0);
	assert_int_equal(b.samples.n, 2);
	assert_int_equal(b.values.v[0], 3);
	assert_int_equal(b.values.v[2], 4);
	assert_string_equal(frame(&b, 1, 0), "g");
	assert_string_equal(frame(&b, 1, 1), "f");
	model_profile_release(&b);
}

static void test_cpuprofile_hitcount_only(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\"},"
				"\"hitCount\":0,\"children\":[2]},{\"id\":2,\"callFrame\":{"
				"\"functionName\":\"f\"},\"hitCount\":7}]}",
				&p, &err),
			 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.values.v[0], 7);
	assert_int_equal(p.values.v[1], 0);
	assert_string_equal(frame(&p, 0, 0), "f");
	model_profile_release(&p);
}

static void expect_error(const char *json, int code, const char *msg)
{
	struct model_profile p;
	struct prof_err err;

	assert_int_equal(decode(json, &p, &err), code);
	assert_string_equal(err.msg, msg);
	model_profile_release(&p);
}

#define CF  "\"callFrame\":{\"functionName\":\"f\"}"
#define N1  "{\"id\":1," CF ",\"children\":[2]}"
#define NOC "{\"id\":1," CF "}"

static void test_cpuprofile_bad_trees(void **state)
{
	(void)state;
	expect_error("{\"nodes\":[" N1 ",{\"id\":2," CF "},{\"id\":2," CF "}]}", -PROF_ECORRUPT,
		     "cpuprofile: nodes[2]: duplicate node id 2 (also nodes[1])");
	expect_error(
		"{\"nodes\":[" NOC ",{\"id\":2," CF ",\"children\":[3]},{\"id\":3," CF
		",\"children\":[2]}]}",
		-PROF_ECORRUPT,
		"cpuprofile: node id 2 is not reachable from the root: its parents form a cycle");
	expect_error("{\"nodes\":[" NOC ",{\"id\":2," CF ",\"children\":[2]}]}", -PROF_ECORRUPT,
		     "cpuprofile: node id 2 lists itself as a child (cycle)");
	expect_error("{\"nodes\":[{\"id\":1," CF ",\"children\":[2,3]},{\"id\":2," CF
		     ",\"children\":[3]},{\"id\":3," CF "}]}",
		     -PROF_ECORRUPT,
		     "cpuprofile: node id 3 is a child of both node id 1 and node id 2");
	expect_error(
		"{\"nodes\":[" N1 ",{\"id\":2," CF ",\"children\":[1]}]}", -PROF_ECORRUPT,
		"cpuprofile: the first node (id 1) must be the root but is a child of node id 2");
	expect_error(
		"{\"nodes\":[" NOC ",{\"id\":2," CF ",\"children\":[1]}]}", -PROF_ECORRUPT,
		"cpuprofile: the first node (id 1) must be the root but is a child of node id 2");
	expect_error("{\"nodes\":[" NOC ",{\"id\":2," CF "}]}", -PROF_ECORRUPT,
		     "cpuprofile: node id 2 has no parent and is not the first node (only one root "
		     "allowed)");
	expect_error("{\"nodes\":[{\"id\":1," CF ",\"children\":[9]}]}", -PROF_ECORRUPT,
		     "cpuprofile: nodes[0].children[0]: not the id of a node");
	expect_error("{\"nodes\":[{\"id\":\"1\"," CF "}]}", -PROF_ECORRUPT,
		     "cpuprofile: nodes[0]: not an object with an integer \"id\"");
	expect_error("{\"nodes\":[{\"id\":1}]}", -PROF_ECORRUPT,
		     "cpuprofile: nodes[0]: \"callFrame\" must be an object with a string "
		     "\"functionName\", a string \"url\" and integer line/column numbers");
	expect_error("{\"nodes\":[]}", -PROF_ECORRUPT,
		     "cpuprofile: \"nodes\" is empty (the first node must be the root)");
}

static void test_cpuprofile_bad_samples(void **state)
{
	(void)state;
	expect_error("{\"nodes\":[" NOC "],\"samples\":[1,7],\"timeDeltas\":[1,1]}", -PROF_ECORRUPT,
		     "cpuprofile: samples[1]: not the id of a node");
	expect_error("{\"nodes\":[" NOC "],\"samples\":[1,1],\"timeDeltas\":[1]}", -PROF_ECORRUPT,
		     "cpuprofile: \"samples\" has 2 entries but \"timeDeltas\" 1");
	expect_error("{\"nodes\":[" NOC "],\"samples\":[1,1],\"timeDeltas\":[1,\"x\"]}",
		     -PROF_ECORRUPT, "cpuprofile: timeDeltas[1]: not an integer in range");
	expect_error("{\"nodes\":[" NOC "],\"startTime\":1.5}", -PROF_ECORRUPT,
		     "cpuprofile: \"startTime\" is not an integer (microseconds)");
	expect_error("{\"nodes\":[" NOC "],\"samples\":[1],\"timeDeltas\":[9223372036854775807]}",
		     -PROF_ECORRUPT, "cpuprofile: timeDeltas[0]: time out of range");
}

static void test_cpuprofile_unsupported_and_truncated(void **state)
{
	(void)state;
	expect_error("[{\"ph\":\"P\",\"name\":\"Profile\"}]", -PROF_EUNSUPPORTED,
		     "cpuprofile: Chrome trace-event files are not supported; save the profile as "
		     ".cpuprofile (DevTools or node --cpu-prof)");
	expect_error("{\"traceEvents\":[]}", -PROF_EUNSUPPORTED,
		     "cpuprofile: Chrome trace-event files are not supported; save the profile as "
		     ".cpuprofile (DevTools or node --cpu-prof)");
	expect_error("{\"head\":{\"children\":[{\"children\":{}}]},\"startTime\":1}",
		     -PROF_ECORRUPT,
		     "cpuprofile: head: node 1 (in walk order): not an object whose \"children\" "
		     "is an array");
	expect_error("{\"head\":{\"id\":1},\"samples\":[1],\"timestamps\":[\"x\"]}", -PROF_ECORRUPT,
		     "cpuprofile: timestamps[0]: not a time in microseconds");
	expect_error("{\"nodes\":[{\"id\":1", -PROF_ECORRUPT,
		     "cpuprofile: line 1:17 (byte 16): '}' expected near end of file");
	expect_error("{\"nodes\":[{\"id\":1e999}]}", -PROF_ECORRUPT,
		     "cpuprofile: line 1:21 (byte 20): real number overflow near '1e999'");
	expect_error(
		"{\"nodes\":[{\"id\":99999999999999999999}]}", -PROF_ECORRUPT,
		"cpuprofile: line 1:36 (byte 35): too big integer near '99999999999999999999'");
}

/* A chain of N nodes sampled at every node asks for N^2/2 stack entries. */
static void test_cpuprofile_stack_budget(void **state)
{
	struct buf b = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	const size_t n = 3000;

	(void)state;
	buf_addstr(&b, "{\"nodes\":[");
	for (size_t i = 1; i <= n; i++)
		buf_addf(
			&b,
			"%s{\"id\":%zu,\"callFrame\":{\"functionName\":\"f%zu\"},\"children\":[%zu]}",
			i > 1 ? "," : "", i, i, i < n ? i + 1 : 0);
	b.len -= 3; /* the last node's "[0]}" -> "[]}" */
	buf_addstr(&b, "]}],\"samples\":[");
	for (size_t i = 1; i <= n; i++)
		buf_addf(&b, "%s%zu", i > 1 ? "," : "", i);
	buf_addstr(&b, "]}");
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_cpuprofile_decode(b.p, b.len, NULL, &p, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "cpuprofile: stacks would exceed "));
	model_profile_release(&p);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuprofile_stacks_times_names),
		cmocka_unit_test(test_cpuprofile_hitcount_only),
		cmocka_unit_test(test_cpuprofile_pre2016_head_layout_reads_alike),
		cmocka_unit_test(test_cpuprofile_bad_trees),
		cmocka_unit_test(test_cpuprofile_bad_samples),
		cmocka_unit_test(test_cpuprofile_unsupported_and_truncated),
		cmocka_unit_test(test_cpuprofile_stack_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
