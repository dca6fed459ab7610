/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.h - file mode: ingest every profile file that appears under a set
 * of globs exactly once, remembering across restarts what was ingested.
 *
 * A poll globs every pattern; a regular file is taken when it is new or
 * changed (size or mtime differ from what the state says) and has not
 * changed for `settle` (a writer still appending is left for a later
 * poll). Its content is read (at most max_file_size bytes), hashed
 * (XXH3-64) and skipped when the same content was already ingested under
 * this or another path (a rename, a copy, a touch); otherwise decoded in
 * any format profd reads (format/detect.h: pprof gzip or raw, JFR, OTLP,
 * folded, ...) and handed to the sink with the series labels `job`,
 * `instance` (this host's name) and the configured labels. A file whose
 * name contains "mutex" or "block" gets that profile name (Go writes
 * both with the same sample types). Files are snapshots: no delta is
 * taken.
 *
 * State file (one per data directory, e.g. DATA/scrape-watch.state),
 * text, one entry per line, appended and fdatasync'ed after each file is
 * accepted by the sink, so a crash can at worst re-send the one file whose
 * entry was not yet durable:
 *
 *   # profd watch state v1
 *   <status> <xxh3 hex> <size> <mtime ns> <path to end of line>
 *
 * status: "ok" (ingested), "dup" (content already ingested under another
 * path), "bad" (could not be decoded or too big: not retried until it
 * changes). Unknown or malformed lines are skipped with a warning. At
 * open, and when more than half the lines are stale, the file is
 * rewritten (temp file, fsync, rename). Entries of files that no longer
 * exist are forgotten; a file that cannot be listed for a while (a
 * missing mount) keeps its entries. Paths containing a line break are
 * refused (logged).
 *
 * A sink failure (server down) leaves the file unrecorded: it is retried
 * on the next poll.
 *
 * Thread-safety: scrape_watch_poll from one thread at a time; with
 * @thread, scrape_watch_new starts a thread that polls until
 * scrape_watch_free.
 */
#ifndef PROF_SCRAPE_WATCH_H
#define PROF_SCRAPE_WATCH_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/config.h"
#include "scrape/scrape.h"

/** struct scrape_watch_result - what one poll did (also totals in stats). */
struct scrape_watch_result {
	uint64_t ingested;  /* files sent to the sink and accepted */
	uint64_t samples;   /* their samples */
	uint64_t skipped;   /* already ingested (same path or same content) */
	uint64_t unsettled; /* changed too recently: left for a later poll */
	uint64_t bad;	    /* undecodable or too big (recorded, not retried) */
	uint64_t failed;    /* the sink refused: retried next poll */
};

struct scrape_watch;

/**
 * scrape_watch_new() - watch the @n configurations @c (lent, must outlive
 * the watcher), remembering in @state_path (created as needed; its
 * directory must exist), handing profiles to @sink (copied). With
 * @thread, a thread polls every min(poll_interval) until _free.
 * Errors: -errno when the state file cannot be read or written, with
 * @err naming it.
 */
int scrape_watch_new(const struct scrape_watch_conf *c, size_t n, const char *state_path,
		     const struct scrape_sink *sink, bool thread, struct scrape_watch **out,
		     struct prof_err *err);

/**
 * scrape_watch_poll() - one pass over every pattern; @res (may be NULL)
 * gets the counts of this pass. Returns 0, or -errno when the state file
 * could not be appended to (the file was ingested; it may be sent again
 * after a restart).
 */
int scrape_watch_poll(struct scrape_watch *w, struct scrape_watch_result *res);

/** scrape_watch_get_totals() - counts since _new. Thread-safe. */
void scrape_watch_get_totals(struct scrape_watch *w, struct scrape_watch_result *res);

/** scrape_watch_free() - stop the thread (after its current file), free. NULL ok. */
void scrape_watch_free(struct scrape_watch *w);

#endif
