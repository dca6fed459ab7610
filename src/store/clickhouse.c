/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse.c - the ClickHouse backend of the store (clickhouse.h): URL,
 * HTTP calls, schema, open and close; ingest is in clickhouse_ingest.c,
 * scans in clickhouse_scan.c (shared parts: clickhouse_int.h).
 *
 * ClickHouse facts relied on (HTTP interface documentation, checked
 * against 18.16.1): a POST body is the query, or with ?query= in the URL
 * the INSERT's data; the answer is 200 with the result, anything else an
 * error whose body is the exception text. ReplacingMergeTree keeps one row
 * per ORDER BY key after merges (until then duplicates are read: scans
 * deduplicate by id). LIMIT n BY, arrayJoin and arrayExists with lambdas
 * exist in 18.16; TTL does not.
 */
#include "base/compat.h"
#include "store/clickhouse.h"
#include "store/clickhouse_int.h"

#include "base/buf.h"
#include "base/curl_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "store/backend.h"
#include "store/head_int.h"
#include "store/store_int.h"

#include <errno.h>
#include <string.h>
#include <xxhash.h>

bool store_ch_is_url(const char *s)
{
	return s && !strncmp(s, "clickhouse://", 13);
}

/* --- HTTP --------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	return buf_add(b, p, size * n) ? 0 : size * n;
}

/* store_ch_call: see clickhouse_int.h. */
int store_ch_call(struct ch *c, const char *sql, const void *data, size_t n, struct buf *out,
		  struct prof_err *err)
{
	struct buf url, ans;
	CURL *h;
	CURLcode cc;
	long status = 0;
	int rc = 0;

	buf_init(&url, 0);
	buf_init(&ans, CH_MAX_ANSWER);
	PROF_ASSERT(buf_addstr(&url, c->base) == 0);
	if (data) {
		PROF_ASSERT(buf_addstr(&url, "&query=") == 0);
		PROF_ASSERT(buf_add_url_escaped(&url, sql) == 0);
	}
	PROF_ASSERT(buf_add(&url, "", 1) == 0);
	h = curl_easy_init();
	if (!h) {
		rc = prof_err_set(err, -ENOMEM, -1, "%s: cannot start an HTTP call", c->desc);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, url.p);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	if (data) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, n ? data : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(sql));
	}
	if (c->user) {
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
	}
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &ans);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (cc == CURLE_WRITE_ERROR) {
		rc = prof_err_set(err, -PROF_ETOOBIG, -1, "%s: answer over %llu bytes", c->desc,
				  (unsigned long long)CH_MAX_ANSWER);
	} else if (cc == CURLE_COULDNT_CONNECT) {
		rc = prof_err_set(err, -ECONNREFUSED, -1, "%s: cannot connect: %s", c->desc,
				  curl_easy_strerror(cc));
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		rc = prof_err_set(err, -ETIMEDOUT, -1, "%s: no answer in %ld ms", c->desc,
				  c->timeout_ms);
	} else if (cc != CURLE_OK) {
		rc = prof_err_set(err, -EIO, -1, "%s: %s", c->desc, curl_easy_strerror(cc));
	} else if (status != 200) {
		int len = (int)PROF_MIN(ans.len, (size_t)300);

		while (len > 0 && (ans.p[len - 1] == '\n' || ans.p[len - 1] == ' '))
			len--;
		rc = prof_err_set(err, -EIO, -1, "%s: HTTP %ld: %.*s", c->desc, status, len,
				  ans.p ? ans.p : "");
	}
	if (!rc && out) {
		buf_release(out);
		*out = ans;
		buf_init(&ans, 0);
	}
out:
	buf_release(&url);
	buf_release(&ans);
	return rc;
}

/* store_ch_call with the SQL built in @sql (released here). */
int store_ch_sql(struct ch *c, struct buf *sql, struct buf *out, struct prof_err *err)
{
	int rc;

	PROF_ASSERT(buf_add(sql, "", 1) == 0);
	if (c->cluster && strstr(sql->p, " IN (SELECT")) {
		/* Subqueries over Distributed tables run once, on the node asked,
		 * and their answer goes to the shards (distributed_product_mode
		 * refuses a plain IN there). */
		struct buf g = BUF_INIT;

		for (const char *p = sql->p; *p;) {
			const char *at = strstr(p, " IN (SELECT");

			if (!at) {
				PROF_ASSERT(buf_addstr(&g, p) == 0);
				break;
			}
			PROF_ASSERT(buf_add(&g, p, (size_t)(at - p)) == 0);
			PROF_ASSERT(buf_addstr(&g, " GLOBAL IN (SELECT") == 0);
			p = at + strlen(" IN (SELECT");
		}
		PROF_ASSERT(buf_add(&g, "", 1) == 0);
		buf_release(sql);
		*sql = g;
	}
	rc = store_ch_call(c, sql->p, NULL, 0, out, err);
	buf_release(sql);
	return rc;
}

/* --- schema ------------------------------------------------------------- */

/*
 * The tables of schema 2 (1 without samples_hour). samples and
 * samples_hour are partitioned by dataset and day so retention drops
 * partitions; the dictionaries collapse repeated ids. samples_hour holds
 * per (series, hour, stack) the sum, the row count, the time range and
 * the first row (ingest time, order) of samples' rows, as aggregate
 * states (AggregatingMergeTree: a SummingMergeTree could keep the sums
 * but not the minimum and maximum that the scans' order and ranges
 * read; 18.16 has no SimpleAggregateFunction).
 * With a cluster each is a Replicated* table NAME_local on every node
 * (ZooKeeper path by the node's {shard} macro, replica by {replica}) and
 * a Distributed table NAME over them, sharded by the id so that every
 * copy of one id lands in one shard (and collapses there).
 */
struct ch_table {
	const char *name, *columns;
	const char *engine;    /* MergeTree family, Replicated prefixed with a cluster */
	const char *partition; /* or NULL */
	const char *order, *shard_key;
};

static const struct ch_table ch_tables[] = {
	{ "samples",
	  "dataset String, series_id UInt64, ts UInt64, stack_id UInt64, attrs_id UInt64, "
	  "value Int64, ingest_ns UInt64, ord UInt32",
	  "MergeTree", "(dataset, toDate(intDiv(ts, 1000000000)))",
	  "(dataset, series_id, ts, stack_id)", "series_id" },
	/* schema 2: the hour rollup, fed by samples_hour_mv (below) */
	{ "samples_hour",
	  "dataset String, series_id UInt64, hour UInt64, stack_id UInt64, "
	  "sum_value AggregateFunction(sum, Int64), nrows AggregateFunction(count), "
	  "min_ts AggregateFunction(min, UInt64), max_ts AggregateFunction(max, UInt64), "
	  "first_row AggregateFunction(min, Tuple(UInt64, UInt32))",
	  "AggregatingMergeTree", "(dataset, toDate(intDiv(hour, 1000000000)))",
	  "(dataset, series_id, hour, stack_id)", "series_id" },
	{ "series",
	  "dataset String, series_id UInt64, type String, lnames Array(String), "
	  "lvalues Array(String), first_ns UInt64, first_ord UInt32",
	  "ReplacingMergeTree", NULL, "(dataset, series_id)", "series_id" },
	{ "stacks",
	  "dataset String, stack_id UInt64, locs Array(UInt64), first_ns UInt64, first_ord UInt32",
	  "ReplacingMergeTree", NULL, "(dataset, stack_id)", "stack_id" },
	{ "locations",
	  "dataset String, loc_id UInt64, mapping_id UInt64, address UInt64, folded UInt8, "
	  "frame_type String, fn_name Array(String), fn_system_name Array(String), "
	  "fn_file Array(String), fn_start_line Array(Int64), has_fn Array(UInt8), "
	  "line Array(Int64), col Array(Int64)",
	  "ReplacingMergeTree", NULL, "(dataset, loc_id)", "loc_id" },
	{ "mappings",
	  "dataset String, mapping_id UInt64, mem_start UInt64, mem_limit UInt64, "
	  "file_offset UInt64, filename String, build_id String, flags UInt8",
	  "ReplacingMergeTree", NULL, "(dataset, mapping_id)", "mapping_id" },
	{ "attrs",
	  "dataset String, attrs_id UInt64, lnames Array(String), lvalues Array(String), "
	  "has_link UInt8, trace_id String, span_id String",
	  "ReplacingMergeTree", NULL, "(dataset, attrs_id)", "attrs_id" },
};

/* " ON CLUSTER name" or "" */
static void on_cluster(struct buf *b, const struct ch *c)
{
	if (c->cluster)
		PROF_ASSERT(buf_addf(b, " ON CLUSTER %s", c->cluster) == 0);
}

/* The rollup's columns from samples' rows, and their grouping. */
#define CH_HOUR_COLUMNS                                                                     \
	"dataset, series_id, intDiv(ts, 3600000000000) * 3600000000000 AS hour, stack_id, " \
	"sumState(value) AS sum_value, countState() AS nrows, minState(ts) AS min_ts, "     \
	"maxState(ts) AS max_ts, minState((ingest_ns, ord)) AS first_row"
#define CH_HOUR_GROUP "GROUP BY dataset, series_id, hour, stack_id"

static int ch_schema(struct ch *c, struct prof_err *err)
{
	struct buf sql, ans = BUF_INIT;
	uint64_t have = 0;
	/* rows ingested before this have no rollup rows when the feed is new */
	int64_t started_ns = prof_now_ns();
	int rc;

	struct ch at_root = *c;

	at_root.base = c->root; /* the database may not exist yet */
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "CREATE DATABASE IF NOT EXISTS %s", c->db) == 0);
	on_cluster(&sql, c);
	rc = store_ch_sql(&at_root, &sql, NULL, err);
	if (!rc) {
		/* on every node of a cluster, one replica each */
		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql, "CREATE TABLE IF NOT EXISTS %s.profd_schema", c->db) ==
			    0);
		on_cluster(&sql, c);
		PROF_ASSERT(buf_addstr(&sql, " (version UInt32, applied_ns UInt64) ENGINE = ") ==
			    0);
		if (c->cluster)
			PROF_ASSERT(buf_addf(&sql,
					     "ReplicatedMergeTree('/clickhouse/tables/all/%s/"
					     "profd_schema', '{replica}')",
					     c->db) == 0);
		else
			PROF_ASSERT(buf_addstr(&sql, "MergeTree()") == 0);
		PROF_ASSERT(buf_addstr(&sql, " ORDER BY version") == 0);
		rc = store_ch_sql(c, &sql, NULL, err);
	}
	for (size_t i = 0; !rc && i < PROF_ARRAY_SIZE(ch_tables); i++) {
		const struct ch_table *t = &ch_tables[i];
		const char *eng = t->engine;

		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s%s", c->db, t->name,
				     c->cluster ? "_local" : "") == 0);
		on_cluster(&sql, c);
		PROF_ASSERT(buf_addf(&sql, " (%s) ENGINE = ", t->columns) == 0);
		if (c->cluster)
			PROF_ASSERT(buf_addf(&sql,
					     "Replicated%s('/clickhouse/tables/{shard}/%s/%s', "
					     "'{replica}')",
					     eng, c->db, t->name) == 0);
		else
			PROF_ASSERT(buf_addf(&sql, "%s()", eng) == 0);
		if (t->partition)
			PROF_ASSERT(buf_addf(&sql, " PARTITION BY %s", t->partition) == 0);
		PROF_ASSERT(buf_addf(&sql, " ORDER BY %s", t->order) == 0);
		rc = store_ch_sql(c, &sql, NULL, err);
		if (rc || !c->cluster)
			continue;
		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s", c->db, t->name) ==
			    0);
		on_cluster(&sql, c);
		PROF_ASSERT(
			buf_addf(&sql, " AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local, %s)",
				 c->db, t->name, c->cluster, c->db, t->name, t->shard_key) == 0);
		rc = store_ch_sql(c, &sql, NULL, err);
	}
	if (!rc) {
		/* the rollup's feed: every insert into samples, per block */
		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql,
				     "CREATE MATERIALIZED VIEW IF NOT EXISTS %s.samples_hour_mv",
				     c->db) == 0);
		on_cluster(&sql, c);
		PROF_ASSERT(buf_addf(&sql,
				     " TO %s.samples_hour%s AS SELECT %s FROM %s.samples%s %s",
				     c->db, c->cluster ? "_local" : "", CH_HOUR_COLUMNS, c->db,
				     c->cluster ? "_local" : "", CH_HOUR_GROUP) == 0);
		rc = store_ch_sql(c, &sql, NULL, err);
	}
	if (rc)
		return rc;
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "SELECT max(version) FROM %s.profd_schema FORMAT RowBinary",
			     c->db) == 0);
	rc = store_ch_sql(c, &sql, &ans, err);
	if (rc)
		return rc;
	if (ans.len >= 4)
		have = (uint64_t)(unsigned char)ans.p[0] | (uint64_t)(unsigned char)ans.p[1] << 8 |
		       (uint64_t)(unsigned char)ans.p[2] << 16 |
		       (uint64_t)(unsigned char)ans.p[3] << 24;
	buf_release(&ans);
	if (have > STORE_CH_SCHEMA_VERSION)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1,
				    "%s: schema version %llu is newer than this profd's (%d)",
				    c->desc, (unsigned long long)have, STORE_CH_SCHEMA_VERSION);
	if (have == STORE_CH_SCHEMA_VERSION)
		return 0;
	if (have == 1) {
		/* 1 -> 2: the rows ingested before the rollup's feed existed */
		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql,
				     "INSERT INTO %s.samples_hour SELECT %s FROM %s.samples WHERE "
				     "ingest_ns < %lld %s",
				     c->db, CH_HOUR_COLUMNS, c->db, (long long)started_ns,
				     CH_HOUR_GROUP) == 0);
		rc = store_ch_sql(c, &sql, NULL, err);
		if (rc)
			return rc;
		log_info("store %s: schema 1 -> 2: hour rollup filled from the samples", c->desc);
	}
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "INSERT INTO %s.profd_schema VALUES (%d, %lld)", c->db,
			     STORE_CH_SCHEMA_VERSION, (long long)prof_now_ns()) == 0);
	return store_ch_sql(c, &sql, NULL, err);
}

static void ch_free(struct ch *c)
{
	if (!c)
		return;
	store_ch_maint_stop(c);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->mu);
	free(c->base);
	free(c->root);
	free(c->db);
	free(c->ds);
	free(c->dsraw);
	free(c->user);
	free(c->password);
	free(c->desc);
	free(c->cluster);
	free(c);
}

static void ch_close(void *ctx)
{
	ch_free(ctx);
}

static const struct store_backend ch_backend = {
	.name = "clickhouse",
	.ingest = store_ch_ingest,
	.scan = store_ch_scan,
	.types = store_ch_types,
	.stats = store_ch_stats,
	.close = ch_close,
};

/* --- URL ---------------------------------------------------------------- */

/* Percent-decode @s[@n] into a new string; NULL on a bad escape. */
static char *url_decode(const char *s, size_t n)
{
	char *o = xmalloc(n + 1);
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			unsigned v = 0;

			if (i + 2 >= n) {
				free(o);
				return NULL;
			}
			for (int j = 1; j <= 2; j++) {
				char h = s[i + j];

				v <<= 4;
				if (h >= '0' && h <= '9')
					v |= (unsigned)(h - '0');
				else if (h >= 'a' && h <= 'f')
					v |= (unsigned)(h - 'a' + 10);
				else if (h >= 'A' && h <= 'F')
					v |= (unsigned)(h - 'A' + 10);
				else {
					free(o);
					return NULL;
				}
			}
			o[k++] = (char)v;
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	o[k] = 0;
	return o;
}

static int parse_url(struct ch *c, const char *url, struct prof_err *err)
{
	const char *p = url + 13, *slash, *q, *at = NULL, *hp;
	char *hostport;

	if (!store_ch_is_url(url))
		return prof_err_set(err, -EINVAL, -1, "storage: not a clickhouse:// URL: %s", url);
	slash = strchr(p, '/');
	if (!slash || slash == p)
		return prof_err_set(err, -EINVAL, -1, "storage: %s: want clickhouse://HOST:PORT/DB",
				    url);
	at = memchr(p, '@', (size_t)(slash - p));
	hp = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));

		c->user = url_decode(p, (size_t)((colon ? colon : at) - p));
		if (colon)
			c->password = url_decode(colon + 1, (size_t)(at - colon - 1));
		if (!c->user || (colon && !c->password))
			return prof_err_set(err, -EINVAL, -1, "storage: %s: bad %%-escape", url);
		hp = at + 1;
	}
	hostport = xstrndup(hp, (size_t)(slash - hp));
	if (!*hostport || strspn(hostport, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789.-:[]") != strlen(hostport)) {
		free(hostport);
		return prof_err_set(err, -EINVAL, -1, "storage: %s: bad host", url);
	}
	q = strchr(slash + 1, '?');
	c->db = xstrndup(slash + 1, q ? (size_t)(q - slash - 1) : strlen(slash + 1));
	if (!*c->db || strspn(c->db, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789_") != strlen(c->db)) {
		free(hostport);
		return prof_err_set(err, -EINVAL, -1,
				    "storage: %s: the database name must be [A-Za-z0-9_]+", url);
	}
	c->timeout_ms = 30000;
	while (q && *q) {
		const char *k = q + 1, *amp = strchr(k, '&'), *eq;
		size_t len = amp ? (size_t)(amp - k) : strlen(k);
		char *val;

		eq = memchr(k, '=', len);
		if (!eq) {
			free(hostport);
			return prof_err_set(err, -EINVAL, -1, "storage: %s: parameter without '='",
					    url);
		}
		val = url_decode(eq + 1, len - (size_t)(eq - k) - 1);
		if (!val) {
			free(hostport);
			return prof_err_set(err, -EINVAL, -1, "storage: %s: bad %%-escape", url);
		}
		if (eq - k == 4 && !strncmp(k, "user", 4)) {
			free(c->user);
			c->user = val;
		} else if (eq - k == 8 && !strncmp(k, "password", 8)) {
			free(c->password);
			c->password = val;
		} else if (eq - k == 7 && !strncmp(k, "cluster", 7)) {
			if (!*val ||
			    strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					"0123456789_") != strlen(val)) {
				free(val);
				free(hostport);
				return prof_err_set(err, -EINVAL, -1,
						    "storage: %s: the cluster name must be "
						    "[A-Za-z0-9_]+",
						    url);
			}
			free(c->cluster);
			c->cluster = val;
		} else if (eq - k == 10 && !strncmp(k, "timeout_ms", 10)) {
			uint64_t t;

			if (parse_u64(val, &t) || t == 0 || t > 3600000) {
				free(val);
				free(hostport);
				return prof_err_set(err, -EINVAL, -1,
						    "storage: %s: timeout_ms wants 1..3600000",
						    url);
			}
			c->timeout_ms = (long)t;
			free(val);
		} else {
			free(val);
			free(hostport);
			return prof_err_set(err, -EINVAL, -1,
					    "storage: %s: unknown parameter '%.*s' (known: user, "
					    "password, timeout_ms, cluster)",
					    url, (int)(eq - k), k);
		}
		q = amp;
	}
	/* a cluster's inserts return once the shards have the rows */
	c->base = xasprintf("http://%s/?database=%s%s", hostport, c->db,
			    c->cluster ? "&insert_distributed_sync=1" : "");
	c->root = xasprintf("http://%s/?", hostport);
	c->desc = xasprintf("clickhouse://%s/%s", hostport, c->db);
	free(hostport);
	return 0;
}

int store_open_clickhouse(const char *url, const char *dataset, const struct store_options *o,
			  struct store **out, struct prof_err *err)
{
	struct ch *c = xcalloc(1, sizeof(*c));
	struct store_options def;
	struct buf lit = BUF_INIT;
	int rc;

	store_options_default(&def);
	if (!o)
		o = &def;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->retention_ns = o->retention_ns;
	c->maint_interval_ns =
		o->maint_interval_ns > 0 ? o->maint_interval_ns : def.maint_interval_ns;
	rc = parse_url(c, url, err);
	if (!rc)
		rc = prof_curl_load(err);
	if (rc) {
		ch_free(c);
		return rc;
	}
	c->dsraw = xstrdup(dataset);
	sql_str(&lit, dataset, strlen(dataset));
	PROF_ASSERT(buf_add(&lit, "", 1) == 0);
	c->ds = buf_detach(&lit, NULL);
	rc = ch_schema(c, err);
	if (!rc)
		rc = store_ch_maint_start(c, err);
	if (rc) {
		ch_free(c);
		return rc;
	}
	log_info("store: dataset %s in %s (schema %d, retention %llds)", dataset, c->desc,
		 STORE_CH_SCHEMA_VERSION, (long long)(c->retention_ns / 1000000000));
	return store_open_backend(&ch_backend, c, c->desc, out);
}
