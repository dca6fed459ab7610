// SPDX-License-Identifier: Apache-2.0
/*
 * test_perfscript.c - `perf script` text: headers with and without cpu,
 * pid/tid and period, kernel frames, [unknown] symbols, symbols with
 * spaces and parentheses, exact timestamps, and each malformed-line error
 * with its line:column.
 */
#include "base/compat.h"
#include "format/perfscript.h"
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

static const struct model_location *loc_of(const struct model_profile *p, size_t s, uint32_t k)
{
	return &p->locations.v[p->stack_locs.v[p->samples.v[s].stack_off + k]];
}

static const struct model_label *label(const struct model_profile *p, size_t s, const char *key)
{
	const struct model_sample *sm = &p->samples.v[s];

	for (uint32_t i = 0; i < sm->nlabels; i++)
		if (!strcmp(model_str(p, p->labels.v[sm->label_off + i].key), key))
			return &p->labels.v[sm->label_off + i];
	return NULL;
}

static int decode(const char *text, struct model_profile *p, struct prof_err *err)
{
	model_profile_init(p);
	prof_err_init(err);
	return fmt_perfscript_decode(text, strlen(text), NULL, p, err);
}

static const char two_samples[] =
	"# ========\n"
	"# captured on: x\n"
	"cwork fp 14251 [003]   581.335949:    2004008 cpu-clock:ppp: \n"
	"\tffffffff8225fd19 pvm_irq_enable+0x19 ([kernel.kallsyms])\n"
	"\t            139f std::vector<int>::at(unsigned long) const+0x6f (/tmp/my app (v2)/bin)\n"
	"\t           2724a [unknown] (/usr/lib/libc.so.6)\n"
	"\t               0 [unknown] ([unknown])\n"
	"\n"
	"java 10/11 581.5: 1000 cpu-clock:ppp: \n"
	"\t            139f std::vector<int>::at(unsigned long) const+0x6f (/tmp/my app (v2)/bin)\n";

static void test_perfscript_headers_frames_labels(void **state)
{
	struct model_profile p;
	struct prof_err err;
	const struct model_location *l;

	(void)state;
	assert_int_equal(decode(two_samples, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.sample_types.n, 2);
	assert_string_equal(model_str(&p, p.sample_types.v[1].type), "cpu");
	assert_string_equal(model_str(&p, p.sample_types.v[1].unit), "nanoseconds");
	assert_string_equal(model_str(&p, p.period_type.type), "cpu");
	assert_int_equal(p.period, 2004008);
	assert_int_equal(p.values.v[0], 1);
	assert_int_equal(p.values.v[1], 2004008);
	assert_int_equal(p.values.v[3], 1000);
	/* Times are exact: 581.335949 s and 581.5 s in ns. */
	assert_int_equal(p.samples.v[0].timestamp_ns, 581335949000LL);
	assert_int_equal(p.samples.v[1].timestamp_ns, 581500000000LL);

	assert_int_equal(p.samples.v[0].nstack, 4);
	assert_string_equal(frame(&p, 0, 0), "pvm_irq_enable");
	assert_string_equal(model_str(&p, loc_of(&p, 0, 0)->frame_type), "kernel");
	assert_int_equal(loc_of(&p, 0, 0)->address, 0xffffffff8225fd19ULL);
	assert_string_equal(frame(&p, 0, 1), "std::vector<int>::at(unsigned long) const");
	l = loc_of(&p, 0, 1);
	assert_string_equal(model_str(&p, l->frame_type), "native");
	assert_string_equal(model_str(&p, p.mappings.v[l->mapping].filename),
			    "/tmp/my app (v2)/bin");
	/* [unknown] symbol: address + mapping, no lines, named after the mapping. */
	l = loc_of(&p, 0, 2);
	assert_int_equal(l->nlines, 0);
	assert_int_equal(l->address, 0x2724a);
	assert_string_equal(frame(&p, 0, 2), "[libc.so.6]");
	/* [unknown] dso: no mapping. */
	assert_int_equal(loc_of(&p, 0, 3)->mapping, 0);
	assert_string_equal(frame(&p, 0, 3), "<unknown>");
	/* The same frame in two samples is one location. */
	assert_int_equal(p.stack_locs.v[p.samples.v[1].stack_off], p.stack_locs.v[1]);

	assert_string_equal(model_str(&p, label(&p, 0, "thread.name")->str), "cwork fp");
	assert_int_equal(label(&p, 0, "thread.id")->num, 14251);
	assert_int_equal(label(&p, 0, "cpu.logical_number")->num, 3);
	assert_null(label(&p, 0, "process.pid"));
	assert_int_equal(label(&p, 1, "process.pid")->num, 10);
	assert_int_equal(label(&p, 1, "thread.id")->num, 11);
	assert_null(label(&p, 1, "cpu.logical_number"));
	model_profile_release(&p);
}

static void test_perfscript_events_without_period_and_inline_frame(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	/* No -g: the frame follows the event on the header line; two events. */
	assert_int_equal(decode("perf 7 1.000001: cycles:u:  4004 main+0x4 (/bin/x)\n"
				"perf 7 1.000002: sched:sched_switch: prev_comm=perf prev_pid=7\n",
				&p, &err),
			 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.sample_types.n, 1); /* no period: only samples/count */
	assert_int_equal(p.samples.v[0].nstack, 1);
	assert_string_equal(frame(&p, 0, 0), "main");
	assert_int_equal(p.samples.v[1].nstack, 0);
	model_profile_release(&p);

	assert_int_equal(decode("a 1 2.0: 5 cycles:u:\n\t10 f (/x)\na 1 3.0: 7 "
				"sched:sched_switch: x\n",
				&p, &err),
			 0);
	assert_int_equal(p.sample_types.n, 3);
	assert_string_equal(model_str(&p, p.sample_types.v[1].type), "cycles");
	assert_string_equal(model_str(&p, p.sample_types.v[1].unit), "count");
	assert_string_equal(model_str(&p, p.sample_types.v[2].type), "sched:sched_switch");
	assert_int_equal(p.values.v[1], 5);
	assert_int_equal(p.values.v[2], 0);
	assert_int_equal(p.values.v[5], 7);
	model_profile_release(&p);
}

static void test_perfscript_errors(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("\tffff f (x)\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 1:2 (byte 1): frame line outside a sample "
				     "(no header above it)");
	model_profile_release(&p);

	assert_int_equal(decode("a 1 1.0: ev:\n\tzz f (x)\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 2:2 (byte 14): expected a frame \"address "
				     "symbol (dso)\"");
	assert_int_equal(err.offset, 14);
	model_profile_release(&p);

	assert_int_equal(decode("a 1 1.0: ev:\n\nhello world\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 3:1 (byte 14): expected a sample header "
				     "\"comm tid time: [period] event:\"");
	model_profile_release(&p);

	assert_int_equal(decode("a x1 1.0: ev:\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 1:3 (byte 2): bad thread id (expected TID "
				     "or PID/TID)");
	model_profile_release(&p);

	assert_int_equal(decode("a 1 [x] 1.0: ev:\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 1:5 (byte 4): bad cpu number");
	model_profile_release(&p);

	assert_int_equal(decode("a 1 1.0: 5 noevent\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 1:12 (byte 11): expected the event name "
				     "followed by ':'");
	model_profile_release(&p);

	assert_int_equal(decode("1 1.0: ev:\n", &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "perf-script: line 1:1 (byte 0): no command name before the "
				     "thread id");
	model_profile_release(&p);

	assert_int_equal(decode("# only a comment\n\n", &p, &err), -PROF_EFORMAT);
	assert_string_equal(err.msg, "perf-script: no sample header found");
	model_profile_release(&p);
}

static void test_perfscript_sniff(void **state)
{
	(void)state;
	assert_true(fmt_perfscript_sniff(two_samples, sizeof(two_samples) - 1));
	assert_false(fmt_perfscript_sniff("a;b;c 12\n", 9));
	assert_false(fmt_perfscript_sniff("", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perfscript_headers_frames_labels),
		cmocka_unit_test(test_perfscript_events_without_period_and_inline_frame),
		cmocka_unit_test(test_perfscript_errors),
		cmocka_unit_test(test_perfscript_sniff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
