// SPDX-License-Identifier: Apache-2.0
/*
 * test_pprof_legacy.c - the legacy pprof formats (src/format/pprof_legacy.c)
 * on handmade inputs, one per parser and per rule. The expected values
 * are what `go tool pprof -raw` (Go 1.19) prints for the same bytes:
 * de-sampled heap values, addresses moved back into the call, handler
 * frames stripped, mappings from the memory map section, the main binary
 * moved first, Java location tables, contention unsampling (including
 * the backtracking parse of "123 @ 0x1001" as 12 cycles, 3 events),
 * octal counts; then the errors, each with its exact message.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/detect.h"
#include "format/pprof_legacy.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

#define LIT(s) s, sizeof(s) - 1

static void decode_ok(const void *data, size_t n, struct model_profile *p)
{
	struct prof_err err;

	model_profile_init(p);
	prof_err_init(&err);
	if (fmt_pprof_legacy_decode(data, n, NULL, p, &err) != 0)
		fail_msg("decode failed: %s", err.msg);
	assert_int_equal(model_profile_validate(p, NULL), 0);
}

static void expect_error(const void *data, size_t n, int code, const char *msg)
{
	struct model_profile p;
	struct prof_err err;
	int rc;

	model_profile_init(&p);
	prof_err_init(&err);
	rc = fmt_pprof_legacy_decode(data, n, NULL, &p, &err);
	if (rc != code || strcmp(err.msg, msg))
		fail_msg("rc %d (want %d), message \"%s\"\n           want \"%s\"", rc, code,
			 err.msg, msg);
	model_profile_release(&p);
}

/* "type/unit type/unit ..." of the sample types. */
static void assert_types(const struct model_profile *p, const char *want)
{
	struct buf b = BUF_INIT;

	for (size_t t = 0; t < p->sample_types.n; t++)
		buf_addf(&b, "%s%s/%s", t ? " " : "", model_str(p, p->sample_types.v[t].type),
			 model_str(p, p->sample_types.v[t].unit));
	assert_string_equal(b.p ? b.p : "", want);
	buf_release(&b);
}

/* Sample @i as "v0 v1 ...: addr addr ..." (hex addresses, leaf first). */
static void assert_sample(const struct model_profile *p, size_t i, const char *want)
{
	const struct model_sample *s = &p->samples.v[i];
	struct buf b = BUF_INIT;

	for (size_t t = 0; t < p->sample_types.n; t++)
		buf_addf(&b, "%s%" PRId64, t ? " " : "", p->values.v[s->value_off + t]);
	buf_addstr(&b, ":");
	for (uint32_t k = 0; k < s->nstack; k++)
		buf_addf(&b, " %#" PRIx64,
			 p->locations.v[p->stack_locs.v[s->stack_off + k]].address);
	assert_string_equal(b.p, want);
	buf_release(&b);
}

/* The numeric label "bytes" of sample @i, or -1 without one. */
static int64_t bytes_label(const struct model_profile *p, size_t i)
{
	const struct model_sample *s = &p->samples.v[i];

	for (uint32_t k = 0; k < s->nlabels; k++)
		if (!strcmp(model_str(p, p->labels.v[s->label_off + k].key), "bytes"))
			return p->labels.v[s->label_off + k].num;
	return -1;
}

/* The mapping file of the location of frame @k of sample @i. */
static const char *frame_mapping(const struct model_profile *p, size_t i, uint32_t k)
{
	const struct model_sample *s = &p->samples.v[i];
	const struct model_location *l = &p->locations.v[p->stack_locs.v[s->stack_off + k]];

	return model_str(p, p->mappings.v[l->mapping].filename);
}

static void test_heap_v2_desampled(void **state)
{
	static const char in[] = "heap profile: 3: 3072 [5: 10240] @ heap/1024\n"
				 "2: 2048 [4: 8192] @ 0x1001 0x2002\n"
				 "1: 1024 [1: 2048] @ 0x1001 0x3003\n"
				 "\n# comment\n";
	struct model_profile p;

	(void)state;
	decode_ok(LIT(in), &p);
	assert_types(&p, "alloc_objects/count alloc_space/bytes inuse_objects/count "
			 "inuse_space/bytes");
	/* "heap/1024" is twice the rate: period 512, values / (1 - exp(-avg/512)). */
	assert_int_equal(p.period, 512);
	assert_string_equal(model_str(&p, p.period_type.type), "space");
	assert_int_equal(p.samples.n, 2);
	assert_sample(&p, 0, "4 8344 2 2368: 0x1000 0x2001");
	assert_sample(&p, 1, "1 2086 1 1184: 0x1000 0x3002");
	assert_int_equal(bytes_label(&p, 0), 1024);
	/* One unnamed mapping covering everything (remapMappingIDs' fake one). */
	assert_int_equal(p.mappings.n, 2);
	assert_int_equal(p.mappings.v[1].memory_limit, UINT64_MAX);
	assert_int_equal(p.locations.n, 4);
	assert_true(!strncmp(model_str(&p, p.drop_frames), "calloc|cfree|malloc|", 20));
	assert_string_equal(model_str(&p, p.keep_frames),
			    "runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*");
	model_profile_release(&p);
}

static void test_heap_tcmalloc_with_memory_map(void **state)
{
	static const char in[] = "heap profile: 1: 100 [0: 0] @ heapprofile\n"
				 "1: 100 [0: 0] @ 0x401001 0x7f0000001001\n"
				 "MAPPED_LIBRARIES:\n"
				 "00400000-00500000 r-xp 00000000 08:01 12 /usr/lib/libfoo.so\n"
				 "7f0000000000-7f0000100000 r-xp 00000000 08:01 13 /bin/app\n"
				 "7f0000100000-7f0000200000 rw-p 00000000 08:01 13 /bin/app\n";
	struct model_profile p;

	(void)state;
	decode_ok(LIT(in), &p);
	/* No allocation columns in the header: objects/space, no de-sampling. */
	assert_types(&p, "objects/count space/bytes");
	assert_int_equal(p.period, 1);
	assert_sample(&p, 0, "1 100: 0x401000 0x7f0000001000");
	/* The non-executable mapping is skipped; the main binary goes first. */
	assert_int_equal(p.mappings.n, 3);
	assert_string_equal(model_str(&p, p.mappings.v[1].filename), "/bin/app");
	assert_string_equal(frame_mapping(&p, 0, 0), "/usr/lib/libfoo.so");
	assert_string_equal(frame_mapping(&p, 0, 1), "/bin/app");
	model_profile_release(&p);

	/* growthz: period 1, objects/space. */
	static const char growth[] =
		"heap profile: 1: 16 [1: 16] @ growthz\n1: 16 [1: 16] @ 0x10\n";
	decode_ok(LIT(growth), &p);
	assert_types(&p, "objects/count space/bytes");
	assert_sample(&p, 0, "1 16: 0xf");
	assert_int_equal(bytes_label(&p, 0), 16);
	model_profile_release(&p);
}

static void test_heap_errors(void **state)
{
	(void)state;
	expect_error(LIT("heap profile: 1: 16 [2: 32] @ heap_v2/512\n1: 16 [0: 32] @ 0x1\n"),
		     -PROF_ECORRUPT,
		     "pprof-legacy heap: line 2:8 (byte 49): allocation count was 0 but "
		     "allocation bytes was 32");
	expect_error(LIT("heap profile: 1: 16 [1: 16] @ heap_v2/512\nbogus\n"), -PROF_ECORRUPT,
		     "pprof-legacy heap: line 2:1 (byte 42): not a heap sample \"N: M [N: M] @ "
		     "0x...\" (pprof: unexpected number of sample values)");
	expect_error(LIT("heap profile: 1: 16 [2: 32] @ heap_v2/512\n"
			 "1: 99999999999999999999 [1: 1] @ 0x1\n"),
		     -PROF_ECORRUPT,
		     "pprof-legacy heap: line 2:4 (byte 45): inuse bytes '99999999999999999999' "
		     "out of range");
	expect_error(LIT("heap profile: 1: 16 [1: 16] @ heap_v2/512\n"
			 "1: 16 [1: 16] @ 0x10000000000000000\n"),
		     -PROF_ECORRUPT,
		     "pprof-legacy heap: line 2:17 (byte 58): address does not fit in 64 bits");
	/* A header pprof does not know: no parser takes the input. */
	expect_error(LIT("heap profile: 1: 16 [1: 16] @ heapfoo/2\n"), -PROF_EFORMAT,
		     "pprof-legacy: not a legacy profile pprof reads: pprof-legacy heap: "
		     "unknown heap profile kind 'heapfoo'");
}

static void put_words(struct buf *b, const uint64_t *w, size_t n, int size, bool big)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char x[8];

		for (int k = 0; k < size; k++)
			x[big ? size - 1 - k : k] = (unsigned char)(w[i] >> (8 * k));
		buf_add(b, x, (size_t)size);
	}
}

static void test_binary_cpu(void **state)
{
	/* 64-bit little-endian; every sample's second frame is 0x2000: the handler's, dropped. */
	static const uint64_t c1[] = { 0,      3, 0, 10000,  0,	     5,	     3, 0x1000, 0x2000,
				       0x3000, 2, 3, 0x1000, 0x2000, 0x4000, 1, 2,	0x5000,
				       0x2000, 0, 1, 0 };
	/* 32-bit big-endian, no end marker; the leaf repeated by the unwinder is dropped. */
	static const uint64_t c2[] = {
		0, 3, 0, 1000, 0, 4, 3, 0x6001, 0x6001, 0x7000, 1, 1, 0x8000
	};
	struct buf b = BUF_INIT;
	struct model_profile p;

	(void)state;
	put_words(&b, c1, PROF_ARRAY_SIZE(c1), 8, false);
	buf_addstr(&b, "00000000-00010000 r-xp 00000000 00:00 0 /bin/prog\n");
	assert_true(fmt_pprof_legacy_sniff(b.p, b.len));
	assert_int_equal(fmt_detect(b.p, b.len, NULL), FMT_KIND_PPROF_LEGACY);
	decode_ok(b.p, b.len, &p);
	assert_types(&p, "samples/count cpu/nanoseconds");
	assert_int_equal(p.period, 10000000);
	assert_int_equal(p.samples.n, 3);
	assert_sample(&p, 0, "5 50000000: 0x1000 0x2fff");
	assert_sample(&p, 1, "2 20000000: 0x1000 0x3fff");
	assert_sample(&p, 2, "1 10000000: 0x5000");
	assert_int_equal(p.mappings.n, 2);
	assert_string_equal(frame_mapping(&p, 0, 0), "/bin/prog");
	assert_string_equal(model_str(&p, p.drop_frames),
			    "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
			    "__pthread_sighandler|__restore");
	model_profile_release(&p);

	buf_reset(&b);
	put_words(&b, c2, PROF_ARRAY_SIZE(c2), 4, true);
	decode_ok(b.p, b.len, &p);
	assert_int_equal(p.period, 1000000);
	assert_sample(&p, 0, "4 4000000: 0x6001 0x6fff");
	assert_sample(&p, 1, "1 1000000: 0x8000");
	model_profile_release(&p);

	/* A record cut short: pprof would read the missing words as 0; we refuse. */
	buf_reset(&b);
	put_words(&b, c1, 9, 8, false);
	expect_error(b.p, b.len, -PROF_ECORRUPT,
		     "pprof-legacy cpu: record at byte 40: 3 stack words but 16 bytes left");
	buf_reset(&b);
	put_words(&b, c1, 5, 8, false);
	buf_add(&b, "\1\0\0", 3);
	expect_error(b.p, b.len, -PROF_ECORRUPT,
		     "pprof-legacy cpu: record at byte 40: cut short (3 bytes left)");
	buf_release(&b);
}

static void test_binary_java_cpu(void **state)
{
	static const uint64_t c3[] = { 0, 3, 1, 10000, 0, 3, 2, 0x1, 0x2, 1, 1, 0x2, 0, 1, 0 };
	struct buf b = BUF_INIT;
	struct model_profile p;

	(void)state;
	put_words(&b, c3, PROF_ARRAY_SIZE(c3), 8, false);
	buf_addstr(&b, " 0x1 com.X.run (X.java:7)\n 0x2 com.X.main (X.java:3)\n");
	decode_ok(b.p, b.len, &p);
	assert_int_equal(p.samples.n, 2);
	assert_sample(&p, 0, "3 30000000: 0 0"); /* addresses cleared (Aggregate) */
	assert_int_equal(p.functions.n, 3);
	assert_string_equal(model_str(&p, p.functions.v[1].name), "com.X.run");
	assert_string_equal(model_str(&p, p.functions.v[1].filename), "X.java");
	assert_int_equal(p.lines.v[p.locations.v[1].line_off].line, 7);
	assert_int_equal(p.mappings.n, 1); /* every location named: no mapping */
	model_profile_release(&p);
	buf_release(&b);
}

static void test_contention_and_count(void **state)
{
	static const char mutex[] = "--- mutex:\ncycles/second=2000000000\nsampling period=2\n"
				    "4000 3 @ 0x1001 0x2002\n123 @ 0x1001\n";
	static const char gor[] = "goroutine profile: total 5\n3 @ 0x1001 0x2002\n"
				  "# labels: {\"a\":\"b\"}\n#\t0x1000\tmain.f+0x0\t/x.go:1\n\n"
				  "010 @ 0x3003\n";
	struct model_profile p;

	(void)state;
	decode_ok(LIT(mutex), &p);
	assert_types(&p, "contentions/count delay/nanoseconds");
	assert_int_equal(p.period, 2);
	/* delay = cycles x period / GHz; contentions x period; "123 @" is 12 cycles, 3. */
	assert_sample(&p, 0, "6 4000: 0x1000 0x2001");
	assert_sample(&p, 1, "6 12: 0x1000");
	assert_true(!strncmp(model_str(&p, p.drop_frames), "RecordLockProfileData|", 22));
	model_profile_release(&p);

	decode_ok(LIT(gor), &p);
	assert_types(&p, "goroutine/count");
	assert_string_equal(model_str(&p, p.period_type.type), "goroutine");
	assert_sample(&p, 0, "3: 0x1000 0x2001");
	assert_sample(&p, 1, "8: 0x3002"); /* "010" is octal, as strconv.ParseInt(s, 0, 64) */
	model_profile_release(&p);

	/* Go's threadcreate output can have an empty stack, which pprof refuses too. */
	expect_error(LIT("threadcreate profile: total 4\n4 @\n"), -PROF_ECORRUPT,
		     "pprof-legacy count: line 2:1 (byte 30): not a sample \"N @ 0x... 0x...\" "
		     "(pprof: malformed profile format)");
}

static void test_java_text(void **state)
{
	static const char cont[] = "--- contentionz 1 ---\nformat = java\n"
				   "resolution = microseconds\nsampling period = 10\n"
				   "ms since reset = 5\n 7 2 @ 0x1 0x2\n 3 1 @ 0x2 0x3\n\n"
				   " 0x1 com.A.f (A.java:12)\n 0x2 com.B.g (/lib/libjvm.so)\n"
				   " 0x3 VM thread\n";
	static const char heap[] = "--- heapz 1 ---\nformat = java\nresolution = bytes\n"
				   " 4096 2 @ 0x1 0x2\n";
	struct model_profile p;

	(void)state;
	decode_ok(LIT(cont), &p);
	assert_types(&p, "contentions/count delay/microseconds");
	assert_int_equal(p.period, 10);
	assert_int_equal(p.duration_ns, 5000000);
	assert_sample(&p, 0, "20 70: 0 0");
	assert_sample(&p, 1, "10 30: 0 0");
	assert_int_equal(p.functions.n, 4);
	assert_string_equal(model_str(&p, p.functions.v[2].name), "com.B.g");
	assert_string_equal(model_str(&p, p.functions.v[2].filename), "libjvm.so");
	assert_string_equal(model_str(&p, p.functions.v[3].name), "VM thread");
	model_profile_release(&p);

	decode_ok(LIT(heap), &p);
	assert_types(&p, "inuse_objects/count inuse_space/bytes");
	assert_sample(&p, 0, "513 1050625: 0 0"); /* scaled with the 512 KiB Java rate */
	assert_int_equal(bytes_label(&p, 0), 2048);
	model_profile_release(&p);

	/* The 24-byte pprof fuzz input: a heapz sample with a zero count. */
	expect_error(LIT("--- heapz 1 ---\n0 0 @ 0\n"), -PROF_ECORRUPT,
		     "pprof-legacy java heap: sample \"0 0 @ 0\" at byte 16: second value must "
		     "be non-zero");
}

static void test_threadz(void **state)
{
	static const char in[] = "--- threadz 1 ---\n\n"
				 "--- Thread 1 (name: main/1) stack: ---\n  PC: 0x1001\n"
				 "  0x2002 0x3003\n"
				 "--- Thread 2 (name: w/2) stack: ---\n  PC: 0x1001\n"
				 "  0x2002 0x3003\n"
				 "--- Thread 3 (name: w/3) stack: ---\n  same as previous thread\n"
				 "--- Memory map: ---\n";
	struct model_profile p;

	(void)state;
	decode_ok(LIT(in), &p);
	assert_types(&p, "thread/count");
	assert_int_equal(p.samples.n, 2);
	/* The leaf is not a return address; the frames on the next line are. */
	assert_sample(&p, 0, "1: 0x1001 0x2001 0x3002");
	assert_sample(&p, 1, "2: 0x1001 0x2001 0x3002");
	model_profile_release(&p);
}

static void test_sniff_and_limits(void **state)
{
	struct fmt_decode_opts o = { .max_samples = 1 };
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_true(fmt_pprof_legacy_sniff(LIT("heap profile: 1: 2 [3: 4] @ heap_v2/8\n")));
	assert_true(fmt_pprof_legacy_sniff(LIT("--- mutex:\n")));
	assert_true(fmt_pprof_legacy_sniff(LIT("# x\n\ngoroutine profile: total 3\n")));
	assert_true(fmt_pprof_legacy_sniff(LIT(" --- heapz 1 --- \n")));
	assert_false(fmt_pprof_legacy_sniff(LIT("main;foo 12\n")));
	assert_false(fmt_pprof_legacy_sniff(LIT("goroutine profile: total x\n")));
	assert_false(fmt_pprof_legacy_sniff(LIT("\0\0\0\0\3\0\0\0")));
	assert_int_equal(fmt_detect(LIT("--- contention:\ncycles/second=1\n"), NULL),
			 FMT_KIND_PPROF_LEGACY);

	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_pprof_legacy_decode(LIT("goroutine profile: total 2\n1 @ 0x1\n"
						     "1 @ 0x2\n"),
						 &o, &p, &err),
			 -PROF_ETOOBIG);
	assert_string_equal(err.msg, "pprof-legacy count: more than 1 samples (the limit)");
	model_profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_v2_desampled),
		cmocka_unit_test(test_heap_tcmalloc_with_memory_map),
		cmocka_unit_test(test_heap_errors),
		cmocka_unit_test(test_binary_cpu),
		cmocka_unit_test(test_binary_java_cpu),
		cmocka_unit_test(test_contention_and_count),
		cmocka_unit_test(test_java_text),
		cmocka_unit_test(test_threadz),
		cmocka_unit_test(test_sniff_and_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
