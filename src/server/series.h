/* SPDX-License-Identifier: Apache-2.0 */
/*
 * series.h - the active series of a dataset, for the max_active_series
 * limit (config.h, docs/ingest.md).
 *
 * A series (profile type id + series labels, server_series_hash) is active
 * from the first request that stores a sample in it until it has had no
 * stored sample for SERVER_SERIES_IDLE_NS. The set is in memory: after a
 * restart the first max_active_series series to arrive are admitted (the
 * store keeps every series it ever stored; the limit is about growth).
 * Thread-safe (one mutex).
 */
#ifndef PROF_SERVER_SERIES_H
#define PROF_SERVER_SERIES_H

#include "base/compat.h"

/* A series without a stored sample for an hour stops counting. */
#define SERVER_SERIES_IDLE_NS (3600 * (int64_t)1000000000)

struct server_series_set;

/** server_series_new() - an empty set; free with server_series_free. */
struct server_series_set *server_series_new(void);
/** server_series_free() - NULL ok. */
void server_series_free(struct server_series_set *s);

/**
 * server_series_admit() - may a request store into the @n series with
 * hashes @h (duplicates allowed)? Series already active always may; new
 * ones may while the set holds fewer than @limit active series (series
 * idle for SERVER_SERIES_IDLE_NS before @now_ns are forgotten first).
 * All or nothing: true marks every @h active at @now_ns; false changes
 * nothing and sets *@nnew to the number of distinct new series refused.
 */
bool server_series_admit(struct server_series_set *s, const uint64_t *h, size_t n, size_t limit,
			 int64_t now_ns, size_t *nnew);

/** server_series_count() - active series now (idle ones may still be counted). */
size_t server_series_count(struct server_series_set *s);

#endif
