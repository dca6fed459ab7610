/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfod.h - fetching debug info for build IDs nobody uploaded from
 * the debuginfod servers in DEBUGINFOD_URLS (elfutils libdebuginfod;
 * protocol: docs/formats.md "debuginfod"), without ever blocking a query.
 *
 * Lookups never touch the network: sym_debuginfod_lookup answers from
 * what a background thread already fetched, and queues a fetch for a
 * build ID it has not seen. When a fetch ends (found or not), the
 * @done callback runs on that thread, so the symbolizer can forget what
 * it cached for that build ID and pick the file up on the next query.
 * Files live in libdebuginfod's own cache (DEBUGINFOD_CACHE_PATH, by
 * default ~/.cache/debuginfod_client), which also remembers misses
 * (cache_miss_s, 600 s); here a miss is retried after
 * SYM_DEBUGINFOD_RETRY_NS. libdebuginfod is loaded with dlopen on first
 * use, like libcurl (base/curl_dl.h): without DEBUGINFOD_URLS or the
 * library, nothing is loaded and sym_debuginfod_new says why.
 *
 * Thread-safe. The queue holds at most SYM_DEBUGINFOD_MAX_QUEUE build
 * IDs; more are dropped (and asked again by a later lookup).
 */
#ifndef PROF_SYMBOLIZE_DEBUGINFOD_H
#define PROF_SYMBOLIZE_DEBUGINFOD_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/debuginfo.h"

#define SYM_DEBUGINFOD_MAX_QUEUE 4096
#define SYM_DEBUGINFOD_RETRY_NS	 (600 * 1000000000LL)

struct sym_debuginfod;

/**
 * sym_debuginfod_new() - start the fetcher when DEBUGINFOD_URLS is set
 * and libdebuginfod loads. @done(@arg, build_id) is called on the fetcher
 * thread after each fetch that found a file. *@out is the caller's (sym_debuginfod_free).
 * -PROF_EUNSUPPORTED with @err saying why when it cannot start.
 */
int sym_debuginfod_new(void (*done)(void *arg, const char *build_id), void *arg,
		       struct sym_debuginfod **out, struct prof_err *err);

/**
 * sym_debuginfod_free() - stop the fetcher (aborting a transfer in
 * flight) and free; NULL is allowed. @done is not called afterwards.
 */
void sym_debuginfod_free(struct sym_debuginfod *d);

/**
 * sym_debuginfod_lookup() - the cached @kind file for @build_id
 * (lowercase hex): 1 with its path in @path (size @pathsz); 0 when not
 * known yet (a fetch is queued or running); -ENOENT when the servers do
 * not have it (until the retry time). Never blocks on the network.
 */
int sym_debuginfod_lookup(struct sym_debuginfod *d, const char *build_id,
			  enum sym_debuginfo_kind kind, char *path, size_t pathsz);

#endif
