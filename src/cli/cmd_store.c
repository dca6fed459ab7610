// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_store.c - `profd store`: look after a data directory offline.
 *
 *   profd store check DIR     verify every block and WAL record; exit 1 on damage
 *   profd store stats DIR     series, samples, bytes per sample, stacks, locations,
 *                             each block and the bytes of its rollup (RHRS)
 *   profd store compact DIR   flush the head, compact every window, apply retention
 *
 * check and stats change nothing and take no lock (stats replays the WAL
 * in memory, read-only); compact takes the store's lock, so it refuses a
 * directory a server is using. Exit status: 0 ok, 1 damage or failure,
 * 2 usage. stats reads chunk tables and the WAL, not the data's
 * checksums: it exits 1 only for a block it cannot open or whose symbols
 * it cannot read, or a series it cannot read (check finds the rest).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "cli/cli.h"
#include "cli/termtext.h"
#include "store/clickhouse.h"
#include "store/store.h"

#include <getopt.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: profd store check DIR [--quiet]\n"
		   "       profd store stats DIR [--json]\n"
		   "       profd store compact DIR [--retention DURATION]\n"
		   "\n"
		   "  check    verify checksums and structure of every block and WAL record;\n"
		   "           prints each problem with its file and byte offset, exits 1 on\n"
		   "           damage (a torn WAL tail is a warning: it was never acknowledged)\n"
		   "  stats    series, samples, bytes per sample, stack and location counts;\n"
		   "           each block with the bytes of its rollup (RHRS) and their share\n"
		   "  compact  flush the head to a block, merge the blocks of each time window,\n"
		   "           delete blocks older than --retention (e.g. 30d); the directory\n"
		   "           must not be in use by a server\n");
}

static const char *level_name(enum store_check_level l)
{
	switch (l) {
	case STORE_CHECK_OK:
		return "ok";
	case STORE_CHECK_NOTE:
		return "note";
	case STORE_CHECK_WARNING:
		return "warning";
	case STORE_CHECK_ERROR:
		return "error";
	}
	return "?";
}

static void check_report(void *arg, enum store_check_level lvl, const char *path, int64_t off,
			 const char *msg)
{
	bool quiet = *(bool *)arg;

	if (quiet && lvl == STORE_CHECK_OK)
		return;
	if (off >= 0)
		printf("%-7s %s offset %" PRId64 ": %s\n", level_name(lvl), cli_term_name(path),
		       off, cli_term_name(msg));
	else
		printf("%-7s %s: %s\n", level_name(lvl), cli_term_name(path), cli_term_name(msg));
}

static int store_check(int argc, char **argv)
{
	struct store_check_result r;
	bool quiet = false;
	const char *dir = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
			quiet = true;
		else if (argv[i][0] == '-' || dir) {
			usage(stderr);
			return 2;
		} else
			dir = argv[i];
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	int rc = store_check_dir(dir, check_report, &quiet, &r);
	if (rc && rc != -PROF_ECORRUPT) {
		fprintf(stderr, "profd store check: %s: %s\n", cli_term_name(dir),
			prof_strerror(rc));
		return 1;
	}
	printf("check: %" PRIu64 " blocks (%" PRIu64 " rows), %" PRIu64 " WAL segments (%" PRIu64
	       " records): %" PRIu64 " error%s, %" PRIu64 " warning%s\n",
	       r.blocks, r.block_rows, r.wal_segments, r.wal_records, r.errors,
	       r.errors == 1 ? "" : "s", r.warnings, r.warnings == 1 ? "" : "s");
	fflush(stdout);
	return r.errors ? 1 : 0;
}

/* Distinct series (type + labels) across blocks and heads. */
static int count_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct strtab *t = arg;
	char key[4096];
	size_t n = (size_t)snprintf(key, sizeof(key), "%s", s->type);

	(void)src;
	for (uint32_t i = 0; i < s->nlabels && n < sizeof(key); i++)
		n += (size_t)snprintf(key + n, sizeof(key) - n, "%c%s%c%s", 0, s->labels[i].name, 0,
				      s->labels[i].value);
	strtab_intern(t, key, PROF_MIN(n, sizeof(key) - 1));
	return 0;
}

static void fmt_time(int64_t ns, char *out, size_t n)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns == INT64_MAX || ns == INT64_MIN || !gmtime_r(&t, &tm)) {
		snprintf(out, n, "-");
		return;
	}
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* @part of @whole in percent; 0 when @whole is 0. */
static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/*
 * The blocks and the bytes of their rollup chunk (RHRS; RSER in blocks of
 * older versions; docs/storage-format.md): each block's, and the total
 * over all blocks with its share of the blocks' bytes. A block written
 * without one (rollups off, or a flush of a version that left it to
 * compaction) shows "-".
 */
static void stats_blocks(const struct store_block_sizes *bi, size_t n, uint64_t block_bytes,
			 bool json)
{
	uint64_t rb = 0, raw = 0, with = 0;

	for (size_t i = 0; i < n; i++) {
		rb += bi[i].rollup_bytes;
		raw += bi[i].rollup_raw_bytes;
		with += bi[i].rollup[0] != '\0';
	}
	if (json) {
		printf(",\"rollup_bytes\":%" PRIu64 ",\"rollup_raw_bytes\":%" PRIu64
		       ",\"rollup_share\":%.4f,\"block_list\":[",
		       rb, raw, block_bytes ? (double)rb / (double)block_bytes : 0.0);
		for (size_t i = 0; i < n; i++)
			printf("%s{\"id\":\"%016" PRIx64 "\",\"level\":%u,\"min_ts_ns\":%" PRId64
			       ",\"max_ts_ns\":%" PRId64 ",\"rows\":%" PRIu64 ",\"series\":%" PRIu64
			       ",\"bytes\":%" PRIu64 ",\"rollup\":\"%s\",\"rollup_bytes\":%" PRIu64
			       ",\"rollup_raw_bytes\":%" PRIu64 ",\"rollup_share\":%.4f}",
			       i ? "," : "", bi[i].id, bi[i].level, bi[i].min_ts_ns,
			       bi[i].max_ts_ns, bi[i].rows, bi[i].series, bi[i].bytes, bi[i].rollup,
			       bi[i].rollup_bytes, bi[i].rollup_raw_bytes,
			       bi[i].bytes ? (double)bi[i].rollup_bytes / (double)bi[i].bytes
					   : 0.0);
		printf("]");
		return;
	}
	printf("rollups          %" PRIu64 " bytes in %" PRIu64 " of %zu blocks, %.1f%% of the "
	       "block bytes (%" PRIu64 " before zstd)\n",
	       rb, with, n, pct(rb, block_bytes), raw);
	if (!n)
		return;
	printf("\n%-16s %5s %-20s %-20s %10s %7s %12s %6s %12s %6s\n", "block", "level", "from",
	       "to", "rows", "series", "bytes", "rollup", "rollup bytes", "share");
	for (size_t i = 0; i < n; i++) {
		char from[32], to[32];

		fmt_time(bi[i].min_ts_ns, from, sizeof(from));
		fmt_time(bi[i].max_ts_ns, to, sizeof(to));
		printf("%016" PRIx64 " %5u %-20s %-20s %10" PRIu64 " %7" PRIu64 " %12" PRIu64
		       " %6s %12" PRIu64 " %5.1f%%\n",
		       bi[i].id, bi[i].level, from, to, bi[i].rows, bi[i].series, bi[i].bytes,
		       bi[i].rollup[0] ? bi[i].rollup : "-", bi[i].rollup_bytes,
		       pct(bi[i].rollup_bytes, bi[i].bytes));
	}
}

static int store_stats(int argc, char **argv)
{
	struct store_options o;
	struct store *st = NULL;
	struct store_stats s;
	struct prof_err err;
	struct strtab series;
	bool json = false;
	const char *dir = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' || dir) {
			usage(stderr);
			return 2;
		} else
			dir = argv[i];
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	store_options_default(&o);
	o.read_only = true;
	prof_err_init(&err);
	if (store_open_opts(dir, &o, &st, &err)) {
		fprintf(stderr, "profd store stats: %s\n", cli_term_name(err.msg));
		return 1;
	}
	store_get_stats(st, &s);
	struct store_block_sizes *bi = NULL;
	size_t nbi = 0;
	if (store_blocks_sizes(st, &bi, &nbi)) {
		fprintf(stderr, "profd store stats: out of memory\n");
		store_close(st);
		return 1;
	}
	strtab_init(&series);
	struct store_query q = { NULL, NULL, 0, INT64_MIN, INT64_MAX };
	struct store_visitor v = { .arg = &series, .series = count_series };
	struct store_scan_stats ss = { 0 };
	int scan_rc = store_scan(st, &q, &v, &ss, &err);
	if (scan_rc)
		fprintf(stderr, "profd store stats: reading the series: %s\n",
			cli_term_name(err.msg));
	uint64_t nseries = series.n - 1;
	uint64_t broken = s.blocks_broken + ss.blocks_failed; /* not opened + symbols unreadable */
	uint64_t samples = s.block_rows + s.head.rows;
	uint64_t bytes = s.block_bytes + s.wal.bytes;
	char from[32], to[32];
	fmt_time(s.min_ts_ns, from, sizeof(from));
	fmt_time(s.max_ts_ns, to, sizeof(to));
	if (json) {
		struct buf d = BUF_INIT; /* a path is bytes: JSON-escaped, UTF-8 */

		(void)buf_add_json_str(&d, dir, strlen(dir));
		printf("{\"dir\":%s,\"series\":%" PRIu64 ",\"samples\":%" PRIu64
		       ",\"blocks\":%" PRIu64 ",\"blocks_broken\":%" PRIu64
		       ",\"block_rows\":%" PRIu64 ",\"head_rows\":%" PRIu64
		       ",\"block_bytes\":%" PRIu64 ",\"wal_bytes\":%" PRIu64
		       ",\"bytes_per_sample\":%.3f,\"block_bytes_per_sample\":%.3f"
		       ",\"block_stacks\":%" PRIu64 ",\"block_locations\":%" PRIu64
		       ",\"head_stacks\":%" PRIu64 ",\"head_locations\":%" PRIu64
		       ",\"min_ts_ns\":%" PRId64 ",\"max_ts_ns\":%" PRId64,
		       d.p ? d.p : "\"\"", nseries, samples, s.blocks, broken, s.block_rows,
		       s.head.rows, s.block_bytes, s.wal.bytes,
		       samples ? (double)bytes / (double)samples : 0.0,
		       s.block_rows ? (double)s.block_bytes / (double)s.block_rows : 0.0,
		       s.block_stacks, s.block_locations, s.head.stack_nodes, s.head.locations,
		       samples ? s.min_ts_ns : 0, samples ? s.max_ts_ns : 0);
		stats_blocks(bi, nbi, s.block_bytes, true);
		printf("}\n");
		buf_release(&d);
	} else {
		printf("directory        %s\n", cli_term_name(dir));
		printf("series           %" PRIu64 " (distinct label sets, all types)\n", nseries);
		printf("samples          %" PRIu64 " rows (%" PRIu64 " in %" PRIu64
		       " blocks, %" PRIu64 " in the WAL)\n",
		       samples, s.block_rows, s.blocks, s.head.rows);
		if (broken)
			printf("broken blocks    %" PRIu64 " (%" PRIu64
			       " could not be opened, %" PRIu64
			       " with unreadable symbols; their series are not counted; see profd "
			       "store check)\n",
			       broken, s.blocks_broken, ss.blocks_failed);
		else
			printf("broken blocks    none found opening them (checksums of the "
			       "data are verified by profd store check)\n");
		printf("time range       %s .. %s\n", from, to);
		printf("bytes on disk    %" PRIu64 " (blocks %" PRIu64 ", WAL %" PRIu64 ")\n",
		       bytes, s.block_bytes, s.wal.bytes);
		printf("bytes/sample     %.3f overall, %.3f in blocks (symbols and index "
		       "included)\n",
		       samples ? (double)bytes / (double)samples : 0.0,
		       s.block_rows ? (double)s.block_bytes / (double)s.block_rows : 0.0);
		printf("stack nodes      %" PRIu64 " in blocks (per-block tables, summed), %" PRIu64
		       " in the head\n",
		       s.block_stacks, s.head.stack_nodes);
		printf("locations        %" PRIu64 " in blocks (summed), %" PRIu64 " in the head\n",
		       s.block_locations, s.head.locations);
		stats_blocks(bi, nbi, s.block_bytes, false);
	}
	free(bi);
	strtab_release(&series);
	store_close(st);
	return scan_rc || broken ? 1 : 0;
}

static int store_compact_cmd(int argc, char **argv)
{
	struct store_options o;
	struct store *st = NULL;
	struct prof_err err;
	const char *dir = NULL;
	uint32_t n, total = 0, deleted = 0;
	int rc;

	store_options_default(&o);
	o.background = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--retention") && i + 1 < argc) {
			if (parse_duration_ns(argv[++i], &o.retention_ns) || o.retention_ns <= 0) {
				fprintf(stderr,
					"profd store compact: --retention: expected a duration such "
					"as 30d or 720h, got '%s'\n",
					cli_term_name(argv[i]));
				return 2;
			}
		} else if (argv[i][0] == '-' || dir) {
			usage(stderr);
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	prof_err_init(&err);
	if (store_open_opts(dir, &o, &st, &err)) {
		fprintf(stderr, "profd store compact: %s\n", cli_term_name(err.msg));
		return 1;
	}
	struct store_stats before;
	store_get_stats(st, &before);
	rc = store_flush(st, &err);
	while (!rc) {
		rc = store_compact(st, true, &n, &err);
		if (!n)
			break;
		total += n;
	}
	if (!rc)
		rc = store_apply_retention(st, prof_now_ns(), &deleted, &err);
	store_close(st);
	if (rc) {
		fprintf(stderr, "profd store compact: %s\n",
			err.msg[0] ? cli_term_name(err.msg) : prof_strerror(rc));
		return 1;
	}
	printf("compact: %" PRIu64 " rows flushed from the WAL, %u blocks merged, %u deleted by "
	       "retention\n",
	       before.head.rows, total, deleted);
	return 0;
}

int cmd_store(int argc, char **argv)
{
	prof_log_set_level(PROF_LOG_WARN); /* the findings are the output, not "opened" lines */
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (int i = 2; i < argc; i++) {
		if (store_ch_is_url(argv[i])) {
			fprintf(stderr,
				"profd store %s: %s is a ClickHouse store; these commands read an "
				"embedded store's directory (ClickHouse checks and merges its own "
				"tables: CHECK TABLE, system.parts; docs/clickhouse.md)\n",
				cli_term_name(argv[1]), cli_term_name(argv[i]));
			return 2;
		}
	}
	if (!strcmp(argv[1], "check"))
		return store_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stats"))
		return store_stats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "compact"))
		return store_compact_cmd(argc - 1, argv + 1);
	fprintf(stderr, "profd store: unknown subcommand '%s'\n", cli_term_name(argv[1]));
	usage(stderr);
	return 2;
}
