// SPDX-License-Identifier: Apache-2.0
/*
 * decode_inproc.c - in-process timing of decoding alone: read each file and
 * decode it (fmt_decode_any) into a model profile, ROUNDS times, without
 * process start-up. Used by bench/bench_pprof.sh next to `go tool pprof
 * -raw`, whose work is decoding and printing.
 * usage: decode_inproc ROUNDS FILE... ; prints the mean milliseconds per file.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/parse.h"
#include "format/detect.h"
#include "model/profile.h"

int main(int argc, char **argv)
{
	uint64_t rounds;
	int64_t t0, t1;
	size_t files = 0;

	if (argc < 3 || parse_u64(argv[1], &rounds) || rounds == 0) {
		fprintf(stderr, "usage: decode_inproc ROUNDS FILE...\n");
		return 2;
	}
	t0 = prof_now_ns();
	for (uint64_t r = 0; r < rounds; r++) {
		for (int i = 2; i < argc; i++) {
			struct buf data = BUF_INIT;
			struct model_profile p;
			struct prof_err err;

			prof_err_init(&err);
			model_profile_init(&p);
			if (buf_read_file(&data, argv[i]) ||
			    fmt_decode_any(data.p, data.len, argv[i], NULL, &p, &err)) {
				fprintf(stderr, "decode_inproc: %s: %s\n", argv[i], err.msg);
				return 1;
			}
			model_profile_release(&p);
			buf_release(&data);
			files++;
		}
	}
	t1 = prof_now_ns();
	printf("%.3f\n", (double)(t1 - t0) / 1e6 / (double)files);
	return 0;
}
