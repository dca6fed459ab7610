// SPDX-License-Identifier: Apache-2.0
/*
 * top_inproc.c - in-process timing of what `profd top FILE` does per file,
 * without process start-up: read, decode (fmt_decode_any), build the top
 * table, sort every sample type. Used by bench/bench_pprof.sh to split a
 * run's wall time into start-up and work.
 * usage: top_inproc ROUNDS FILE... ; prints the mean milliseconds per file.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/parse.h"
#include "format/detect.h"
#include "query/top.h"

int main(int argc, char **argv)
{
	uint64_t rounds;
	int64_t t0, t1;
	size_t files = 0;

	if (argc < 3 || parse_u64(argv[1], &rounds) || rounds == 0) {
		fprintf(stderr, "usage: top_inproc ROUNDS FILE...\n");
		return 2;
	}
	t0 = prof_now_ns();
	for (uint64_t r = 0; r < rounds; r++) {
		for (int i = 2; i < argc; i++) {
			struct buf data = BUF_INIT;
			struct model_profile p;
			struct query_top top;
			struct prof_err err;

			prof_err_init(&err);
			model_profile_init(&p);
			if (buf_read_file(&data, argv[i]) ||
			    fmt_decode_any(data.p, data.len, argv[i], NULL, &p, &err)) {
				fprintf(stderr, "top_inproc: %s: %s\n", argv[i], err.msg);
				return 1;
			}
			query_top_build(&p, &top);
			for (size_t t = 0; t < top.ntypes; t++) {
				size_t n;

				free(query_top_rows(&top, t, false, &n));
			}
			query_top_release(&top);
			model_profile_release(&p);
			buf_release(&data);
			files++;
		}
	}
	t1 = prof_now_ns();
	printf("%.3f\n", (double)(t1 - t0) / 1e6 / (double)files);
	return 0;
}
