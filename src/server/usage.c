// SPDX-License-Identifier: Apache-2.0
/*
 * usage.c - per-dataset usage counters (hour x profile type), kept in an
 * open-addressing hash table over a vector of rows and persisted as a
 * small JSON file; see usage.h.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/usage.h"

#include <jansson.h>
#include <pthread.h>
#include <xxhash.h>

#define USAGE_MAX_FILE (64u << 20)

struct server_usage {
	pthread_mutex_t lock;
	char *path, *name;
	VEC(struct server_usage_row) rows;
	uint32_t *slots; /* row index + 1; 0 = empty */
	size_t nslots;	 /* power of two, > 2 * rows.n */
	bool dirty;
};

static uint64_t cell_hash(int64_t hour_ms, const char *type)
{
	return XXH3_64bits_withSeed(type, strlen(type), (uint64_t)hour_ms);
}

static void rehash(struct server_usage *u)
{
	size_t n = 64;

	while (n < 2 * (u->rows.n + 1))
		n *= 2;
	free(u->slots);
	u->slots = xcalloc(n, sizeof(*u->slots));
	u->nslots = n;
	for (size_t i = 0; i < u->rows.n; i++) {
		size_t k = cell_hash(u->rows.v[i].hour_ms, u->rows.v[i].type) & (n - 1);

		while (u->slots[k])
			k = (k + 1) & (n - 1);
		u->slots[k] = (uint32_t)(i + 1);
	}
}

/* The row for (hour, type), created when absent (lock held). */
static struct server_usage_row *cell(struct server_usage *u, int64_t hour_ms, const char *type)
{
	size_t k;

	if (!u->slots || 2 * (u->rows.n + 1) > u->nslots)
		rehash(u);
	k = cell_hash(hour_ms, type) & (u->nslots - 1);
	while (u->slots[k]) {
		struct server_usage_row *r = &u->rows.v[u->slots[k] - 1];

		if (r->hour_ms == hour_ms && !strcmp(r->type, type))
			return r;
		k = (k + 1) & (u->nslots - 1);
	}
	struct server_usage_row nr = { .hour_ms = hour_ms, .type = xstrdup(type) };
	VEC_PUSH(&u->rows, nr);
	u->slots[k] = (uint32_t)u->rows.n;
	return &u->rows.v[u->rows.n - 1];
}

static size_t types_in_hour(const struct server_usage *u, int64_t hour_ms)
{
	size_t n = 0;

	/* Rows of one hour are mostly recent: scan from the end. */
	for (size_t i = u->rows.n; i-- > 0;) {
		if (u->rows.v[i].hour_ms == hour_ms)
			n++;
	}
	return n;
}

static int64_t hour_of(int64_t ts_ms)
{
	int64_t h = ts_ms / SERVER_USAGE_HOUR_MS;

	if (ts_ms < 0 && ts_ms % SERVER_USAGE_HOUR_MS)
		h--;
	return h * SERVER_USAGE_HOUR_MS;
}

void server_usage_add(struct server_usage *u, const char *type, int64_t ts_ms, uint64_t received,
		      uint64_t accepted, uint64_t dropped)
{
	int64_t hour = hour_of(ts_ms);
	struct server_usage_row *r;

	if (!received && !accepted && !dropped)
		return;
	pthread_mutex_lock(&u->lock);
	r = cell(u, hour, type);
	if (r->received == 0 && r->accepted == 0 && r->dropped == 0 &&
	    types_in_hour(u, hour) > SERVER_USAGE_MAX_TYPES) {
		/* A new type beyond the cap: count it as "other"; the empty row
		 * just made stays (harmless, it is never written). */
		r = cell(u, hour, "other");
	}
	r->received += received;
	r->accepted += accepted;
	r->dropped += dropped;
	u->dirty = true;
	pthread_mutex_unlock(&u->lock);
}

static int load(struct server_usage *u, struct prof_err *err)
{
	struct buf b;
	json_error_t je;
	json_t *root, *hours;
	size_t i;
	json_t *it;
	int rc;

	buf_init(&b, USAGE_MAX_FILE);
	rc = buf_read_file(&b, u->path);
	if (rc == -ENOENT) {
		buf_release(&b);
		return 0;
	}
	if (rc && rc != -PROF_ETOOBIG) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "usage: cannot read %s: %s", u->path,
				    prof_strerror(rc));
	}
	root = rc ? NULL : json_loadb(b.p ? b.p : "", b.len, 0, &je);
	buf_release(&b);
	hours = root ? json_object_get(root, "hours") : NULL;
	if (!json_is_array(hours)) {
		char *bad = xasprintf("%s.bad-%lld", u->path, (long long)time(NULL));

		log_warn("usage: %s is not a usage file (%s); moved to %s, counting afresh",
			 u->path, root ? "no hours array" : je.text, bad);
		if (rename(u->path, bad))
			log_warn("usage: cannot rename %s: %s", u->path, strerror(errno));
		free(bad);
		json_decref(root);
		return 0;
	}
	json_array_foreach(hours, i, it)
	{
		json_t *h = json_object_get(it, "hour"), *t = json_object_get(it, "type");
		json_t *rv = json_object_get(it, "received"), *ac = json_object_get(it, "accepted");
		json_t *dr = json_object_get(it, "dropped");

		if (!json_is_integer(h) || !json_is_string(t) || !json_is_integer(rv) ||
		    !json_is_integer(ac) || !json_is_integer(dr))
			continue;
		struct server_usage_row *r =
			cell(u, hour_of(json_integer_value(h)), json_string_value(t));
		r->received += (uint64_t)json_integer_value(rv);
		r->accepted += (uint64_t)json_integer_value(ac);
		r->dropped += (uint64_t)json_integer_value(dr);
	}
	json_decref(root);
	return 0;
}

int server_usage_open(const char *path, const char *name, struct server_usage **out,
		      struct prof_err *err)
{
	struct server_usage *u = xcalloc(1, sizeof(*u));
	int rc;

	pthread_mutex_init(&u->lock, NULL);
	u->path = xstrdup(path);
	u->name = xstrdup(name);
	rc = load(u, err);
	if (rc) {
		server_usage_close(u);
		*out = NULL;
		return rc;
	}
	*out = u;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct server_usage_row *x = a, *y = b;

	if (x->hour_ms != y->hour_ms)
		return x->hour_ms < y->hour_ms ? -1 : 1;
	return strcmp(x->type, y->type);
}

static void row_json(struct buf *b, const struct server_usage_row *r, bool iso)
{
	(void)buf_addf(b, "{\"hour\":%lld,", (long long)r->hour_ms);
	if (iso) {
		time_t t = (time_t)(r->hour_ms / 1000);
		struct tm tm;
		char ts[32];

		gmtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:00:00Z", &tm);
		(void)buf_addf(b, "\"time\":\"%s\",", ts);
	}
	(void)buf_addstr(b, "\"type\":");
	(void)buf_add_json_str(b, r->type, strlen(r->type));
	(void)buf_addf(
		b, ",\"received\":%" PRIu64 ",\"accepted\":%" PRIu64 ",\"dropped\":%" PRIu64 "}",
		r->received, r->accepted, r->dropped);
}

int server_usage_flush(struct server_usage *u)
{
	struct buf b;
	int64_t oldest = hour_of(prof_now_ns() / 1000000) -
			 (int64_t)SERVER_USAGE_KEEP_HOURS * SERVER_USAGE_HOUR_MS;
	size_t n = 0;
	int rc;

	pthread_mutex_lock(&u->lock);
	if (!u->dirty) {
		pthread_mutex_unlock(&u->lock);
		return 0;
	}
	/* Forget old hours and empty rows, then write in (hour, type) order. */
	for (size_t i = 0; i < u->rows.n; i++) {
		struct server_usage_row *r = &u->rows.v[i];

		if (r->hour_ms < oldest || (!r->received && !r->accepted && !r->dropped)) {
			free(r->type);
			continue;
		}
		u->rows.v[n++] = *r;
	}
	u->rows.n = n;
	if (n)
		qsort(u->rows.v, n, sizeof(*u->rows.v), row_cmp);
	rehash(u);
	buf_init(&b, 0);
	(void)buf_addstr(&b, "{\"version\":1,\"dataset\":");
	(void)buf_add_json_str(&b, u->name, strlen(u->name));
	(void)buf_addstr(&b, ",\"hours\":[");
	for (size_t i = 0; i < u->rows.n; i++) {
		if (i)
			(void)buf_addstr(&b, ",\n");
		row_json(&b, &u->rows.v[i], false);
	}
	(void)buf_addstr(&b, "]}\n");
	u->dirty = false;
	pthread_mutex_unlock(&u->lock);

	rc = buf_write_file(u->path, b.p, b.len);
	buf_release(&b);
	if (rc) {
		log_warn("usage: cannot write %s: %s", u->path, prof_strerror(rc));
		pthread_mutex_lock(&u->lock);
		u->dirty = true;
		pthread_mutex_unlock(&u->lock);
	}
	return rc;
}

int server_usage_json(struct server_usage *u, int64_t from_ms, int64_t to_ms, struct buf *out,
		      uint64_t totals[3])
{
	struct server_usage_row *sel;
	size_t n = 0;
	int rc = 0;

	if (totals)
		totals[0] = totals[1] = totals[2] = 0;
	pthread_mutex_lock(&u->lock);
	sel = xcalloc(u->rows.n + 1, sizeof(*sel));
	for (size_t i = 0; i < u->rows.n; i++) {
		const struct server_usage_row *r = &u->rows.v[i];

		if (r->hour_ms + SERVER_USAGE_HOUR_MS <= from_ms || r->hour_ms > to_ms)
			continue;
		if (!r->received && !r->accepted && !r->dropped)
			continue;
		sel[n] = *r;
		sel[n].type = xstrdup(r->type);
		n++;
	}
	pthread_mutex_unlock(&u->lock);
	if (n)
		qsort(sel, n, sizeof(*sel), row_cmp);
	(void)buf_add(out, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			(void)buf_add(out, ",", 1);
		row_json(out, &sel[i], true);
		if (totals) {
			totals[0] += sel[i].received;
			totals[1] += sel[i].accepted;
			totals[2] += sel[i].dropped;
		}
	}
	rc = buf_add(out, "]", 1);
	for (size_t i = 0; i < n; i++)
		free(sel[i].type);
	free(sel);
	return rc;
}

void server_usage_close(struct server_usage *u)
{
	if (!u)
		return;
	if (u->path && u->dirty)
		(void)server_usage_flush(u);
	for (size_t i = 0; i < u->rows.n; i++)
		free(u->rows.v[i].type);
	VEC_FREE(&u->rows);
	free(u->slots);
	free(u->path);
	free(u->name);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
