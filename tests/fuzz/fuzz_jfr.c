// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_jfr.c - libFuzzer target for the JFR decoder (src/format/jfr.c):
 * any byte string must give either an error with a code and a reason, or
 * a profile that passes model_profile_validate, for every event family;
 * no crash, leak, out-of-bounds access or unbounded allocation (the
 * gunzip cap is lowered so a gzip bomb costs little).
 * Build: clang -fsanitize=fuzzer,address,undefined -Isrc tests/fuzz/fuzz_jfr.c
 * plus the profd library and -lz -lxxhash (scripts/fuzz.sh does this).
 * Seeds: tests/fuzz/corpus/fuzz_jfr/ (small async-profiler chunks and
 * what fuzzing kept) and the shared corpus's JFR files, all cut to 64 KiB
 * by scripts/fuzz.sh: whole 2 MB JDK recordings ran at 19 inputs a
 * second, small chunks at 800-900. Decoding each input for one family
 * only (chosen by its size) was tried: no faster, since most mutated
 * inputs fail early, and it reached less code in the same time.
 */
#include "base/compat.h"
#include "base/err.h"
#include "format/jfr.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const types[] = { NULL, "jdk.ExecutionSample", "jdk.JavaMonitorWait",
					     NULL };

	for (int e = FMT_JFR_CPU; e <= FMT_JFR_LOCK; e++) {
		struct fmt_jfr_opts o = { (enum fmt_jfr_event)e, NULL, e == FMT_JFR_ALLOC,
					  8u << 20 };
		struct model_profile p;
		struct prof_err err;

		/* Exercise the single-event path too, on alternate inputs. */
		if (size & 1)
			o.event_type = e == FMT_JFR_WALL   ? types[1]
				       : e == FMT_JFR_LOCK ? types[2]
							   : NULL;
		model_profile_init(&p);
		prof_err_init(&err);
		if (fmt_jfr_decode(data, size, &o, &p, &err) != 0) {
			PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
		} else {
			PROF_ASSERT(model_profile_validate(&p, &err) == 0);
			PROF_ASSERT(p.sample_types.n == 2);
		}
		model_profile_release(&p);
		/* A file that is not JFR fails the same way for every family. */
		if (size < 4 || memcmp(data, "FLR", 3) != 0)
			break;
	}
	return 0;
}
