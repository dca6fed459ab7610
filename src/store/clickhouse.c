/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse.c - the ClickHouse backend of the store (clickhouse.h):
 * URL, HTTP calls, schema, ingest (rows to RowBinary) and scans (SQL
 * pushed down, rows rebuilt into a head visited as the embedded store
 * visits one).
 *
 * ClickHouse facts relied on (HTTP interface documentation, checked
 * against 18.16.1): a POST body is the query, or with ?query= in the URL
 * the INSERT's data; the answer is 200 with the result, anything else an
 * error whose body is the exception text. RowBinary: UInt8/UInt64/Int64
 * little-endian fixed width, String as LEB128 length then bytes, Array
 * as LEB128 count then the elements. ReplacingMergeTree keeps one row per
 * ORDER BY key after merges (until then duplicates are read: scans
 * deduplicate by id). LIMIT n BY, arrayJoin and arrayExists with lambdas
 * exist in 18.16; TTL does not.
 */
#include "base/compat.h"
#include "store/clickhouse.h"

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

/* Fixed seed of content ids: the same content gives the same id in every
 * profd process (unlike model/stackkey.h's per-process keys). */
#define CH_ID_SEED 0x70726f6664636831ULL /* "profdch1" */

/* Sample times are kept to this resolution: the embedded store's block
 * default (store_options.ts_resolution_ns), so both give one answer. */
#define CH_TS_RESOLUTION_NS 1000000

/* Answers above this are refused (a scan of a huge range fails clearly). */
#define CH_MAX_ANSWER (4ULL << 30)

struct ch {
	char *base;  /* http://HOST:PORT/?database=DB */
	char *root;  /* http://HOST:PORT/? (for CREATE DATABASE) */
	char *db;    /* DB, [A-Za-z0-9_] */
	char *ds;    /* dataset, as an SQL literal ('...') */
	char *dsraw; /* dataset as given */
	char *user, *password;
	char *desc;    /* clickhouse://HOST:PORT/DB, no credentials */
	char *cluster; /* ?cluster=NAME: Replicated tables, Distributed ones over them */
	long timeout_ms;
};

/* Source ids of the heads scans build: unique, so the query layer's
 * translation cache (keyed by source id and dictionary) never takes one
 * query's head for another's. */
static uint64_t ch_source_seq = 1ULL << 62;

bool store_ch_is_url(const char *s)
{
	return s && !strncmp(s, "clickhouse://", 13);
}

/* --- SQL text ----------------------------------------------------------- */

/* Append @s as a quoted SQL string literal (backslash and quote escaped). */
static void sql_str(struct buf *b, const char *s, size_t n)
{
	PROF_ASSERT(buf_add(b, "'", 1) == 0);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' || c == '\'')
			PROF_ASSERT(buf_add(b, "\\", 1) == 0);
		if (c == 0) {
			PROF_ASSERT(buf_add(b, "\\0", 2) == 0);
			continue;
		}
		PROF_ASSERT(buf_add(b, &c, 1) == 0);
	}
	PROF_ASSERT(buf_add(b, "'", 1) == 0);
}

/* --- RowBinary ---------------------------------------------------------- */

static void rb_u8(struct buf *b, uint8_t v)
{
	PROF_ASSERT(buf_add(b, &v, 1) == 0);
}

static void rb_u64(struct buf *b, uint64_t v)
{
	unsigned char x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	PROF_ASSERT(buf_add(b, x, 8) == 0);
}

static void rb_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	PROF_ASSERT(buf_add(b, x, 4) == 0);
}

static void rb_varint(struct buf *b, uint64_t v)
{
	unsigned char x[10];
	size_t n = 0;

	do {
		x[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			x[n] |= 0x80;
		n++;
	} while (v);
	PROF_ASSERT(buf_add(b, x, n) == 0);
}

static void rb_str(struct buf *b, const char *s, size_t n)
{
	rb_varint(b, n);
	PROF_ASSERT(buf_add(b, s, n) == 0);
}

static void rb_cstr(struct buf *b, const char *s)
{
	rb_str(b, s ? s : "", s ? strlen(s) : 0);
}

/* A reader over an answer; @bad is sticky: once set, every read gives 0. */
struct rd {
	const unsigned char *p, *end;
	bool bad;
};

static bool rd_more(const struct rd *r)
{
	return !r->bad && r->p < r->end;
}

static uint64_t rd_u64(struct rd *r)
{
	uint64_t v = 0;

	if (r->bad || r->end - r->p < 8) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	return v;
}

static uint8_t rd_u8(struct rd *r)
{
	if (r->bad || r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c = rd_u8(r);

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* A string of the answer, lent (not NUL-terminated): *@n bytes. */
static const char *rd_str(struct rd *r, size_t *n)
{
	uint64_t len = rd_varint(r);
	const char *s;

	if (r->bad || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*n = 0;
		return "";
	}
	s = (const char *)r->p;
	r->p += len;
	*n = (size_t)len;
	return s;
}

/* An array's element count, bounded by the bytes left (each element takes one at least). */
static size_t rd_count(struct rd *r)
{
	uint64_t n = rd_varint(r);

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return 0;
	}
	return (size_t)n;
}

/* --- HTTP --------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	return buf_add(b, p, size * n) ? 0 : size * n;
}

/*
 * Run @sql in ClickHouse. With @data (@n bytes) the SQL goes in the URL
 * and @data is the body (an INSERT's rows), else the SQL is the body.
 * The answer goes to @out (may be NULL), which the caller releases.
 * Errors: -ECONNREFUSED (cannot connect), -ETIMEDOUT, -EIO (any other
 * transport failure, or an answer other than 200: @err has the start of
 * ClickHouse's message), -PROF_ETOOBIG (answer over CH_MAX_ANSWER).
 */
static int ch_call(struct ch *c, const char *sql, const void *data, size_t n, struct buf *out,
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

/* ch_call with the SQL built in @sql (released here). */
static int ch_sql(struct ch *c, struct buf *sql, struct buf *out, struct prof_err *err)
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
	rc = ch_call(c, sql->p, NULL, 0, out, err);
	buf_release(sql);
	return rc;
}

/* --- schema ------------------------------------------------------------- */

/*
 * The tables of schema 1. samples is partitioned by dataset and day so
 * retention drops partitions; the dictionaries collapse repeated ids.
 * With a cluster each is a Replicated* table NAME_local on every node
 * (ZooKeeper path by the node's {shard} macro, replica by {replica}) and
 * a Distributed table NAME over them, sharded by the id so that every
 * copy of one id lands in one shard (and collapses there).
 */
struct ch_table {
	const char *name, *columns;
	bool replacing;
	const char *partition; /* or NULL */
	const char *order, *shard_key;
};

static const struct ch_table ch_tables_v1[] = {
	{ "samples",
	  "dataset String, series_id UInt64, ts UInt64, stack_id UInt64, attrs_id UInt64, "
	  "value Int64, ingest_ns UInt64, ord UInt32",
	  false, "(dataset, toDate(intDiv(ts, 1000000000)))", "(dataset, series_id, ts, stack_id)",
	  "series_id" },
	{ "series",
	  "dataset String, series_id UInt64, type String, lnames Array(String), "
	  "lvalues Array(String), first_ns UInt64, first_ord UInt32",
	  true, NULL, "(dataset, series_id)", "series_id" },
	{ "stacks",
	  "dataset String, stack_id UInt64, locs Array(UInt64), first_ns UInt64, first_ord UInt32",
	  true, NULL, "(dataset, stack_id)", "stack_id" },
	{ "locations",
	  "dataset String, loc_id UInt64, mapping_id UInt64, address UInt64, folded UInt8, "
	  "frame_type String, fn_name Array(String), fn_system_name Array(String), "
	  "fn_file Array(String), fn_start_line Array(Int64), has_fn Array(UInt8), "
	  "line Array(Int64), col Array(Int64)",
	  true, NULL, "(dataset, loc_id)", "loc_id" },
	{ "mappings",
	  "dataset String, mapping_id UInt64, mem_start UInt64, mem_limit UInt64, "
	  "file_offset UInt64, filename String, build_id String, flags UInt8",
	  true, NULL, "(dataset, mapping_id)", "mapping_id" },
	{ "attrs",
	  "dataset String, attrs_id UInt64, lnames Array(String), lvalues Array(String), "
	  "has_link UInt8, trace_id String, span_id String",
	  true, NULL, "(dataset, attrs_id)", "attrs_id" },
};

/* " ON CLUSTER name" or "" */
static void on_cluster(struct buf *b, const struct ch *c)
{
	if (c->cluster)
		PROF_ASSERT(buf_addf(b, " ON CLUSTER %s", c->cluster) == 0);
}

static int ch_schema(struct ch *c, struct prof_err *err)
{
	struct buf sql, ans = BUF_INIT;
	uint64_t have = 0;
	int rc;

	struct ch at_root = *c;

	at_root.base = c->root; /* the database may not exist yet */
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "CREATE DATABASE IF NOT EXISTS %s", c->db) == 0);
	on_cluster(&sql, c);
	rc = ch_sql(&at_root, &sql, NULL, err);
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
		rc = ch_sql(c, &sql, NULL, err);
	}
	for (size_t i = 0; !rc && i < sizeof(ch_tables_v1) / sizeof(ch_tables_v1[0]); i++) {
		const struct ch_table *t = &ch_tables_v1[i];
		const char *eng = t->replacing ? "ReplacingMergeTree" : "MergeTree";

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
		rc = ch_sql(c, &sql, NULL, err);
		if (rc || !c->cluster)
			continue;
		buf_init(&sql, 0);
		PROF_ASSERT(buf_addf(&sql, "CREATE TABLE IF NOT EXISTS %s.%s", c->db, t->name) ==
			    0);
		on_cluster(&sql, c);
		PROF_ASSERT(
			buf_addf(&sql, " AS %s.%s_local ENGINE = Distributed(%s, %s, %s_local, %s)",
				 c->db, t->name, c->cluster, c->db, t->name, t->shard_key) == 0);
		rc = ch_sql(c, &sql, NULL, err);
	}
	if (rc)
		return rc;
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "SELECT max(version) FROM %s.profd_schema FORMAT RowBinary",
			     c->db) == 0);
	rc = ch_sql(c, &sql, &ans, err);
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
	buf_init(&sql, 0);
	PROF_ASSERT(buf_addf(&sql, "INSERT INTO %s.profd_schema VALUES (%d, %lld)", c->db,
			     STORE_CH_SCHEMA_VERSION, (long long)prof_now_ns()) == 0);
	return ch_sql(c, &sql, NULL, err);
}

/* --- content ids -------------------------------------------------------- */

static uint64_t id_of(const struct buf *b)
{
	uint64_t id = XXH3_64bits_withSeed(b->p, b->len, CH_ID_SEED);

	return id ? id : 1; /* 0 means "none" (no mapping, the root, no attributes) */
}

static void key_u64(struct buf *b, uint64_t v)
{
	PROF_ASSERT(buf_add(b, &v, sizeof(v)) == 0);
}

static void key_str(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	key_u64(b, n);
	PROF_ASSERT(buf_add(b, s ? s : "", n) == 0);
}

static uint64_t mapping_id(const struct model_profile *d, const struct model_mapping *m)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "M", 1) == 0);
	key_u64(&k, m->memory_start);
	key_u64(&k, m->memory_limit);
	key_u64(&k, m->file_offset);
	key_str(&k, model_str(d, m->filename));
	key_str(&k, model_str(d, m->build_id));
	key_u64(&k, model_mapping_flags(m));
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t location_id(const struct model_profile *d, const struct model_location *l,
			    uint64_t map_id)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "L", 1) == 0);
	key_u64(&k, map_id);
	key_u64(&k, l->address);
	key_u64(&k, l->is_folded);
	key_str(&k, model_str(d, l->frame_type));
	key_u64(&k, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct model_line *ln = &d->lines.v[l->line_off + i];
		const struct model_function *f =
			ln->function ? &d->functions.v[ln->function] : NULL;

		key_u64(&k, f != NULL);
		key_str(&k, f ? model_str(d, f->name) : "");
		key_str(&k, f ? model_str(d, f->system_name) : "");
		key_str(&k, f ? model_str(d, f->filename) : "");
		key_u64(&k, f ? (uint64_t)f->start_line : 0);
		key_u64(&k, (uint64_t)ln->line);
		key_u64(&k, (uint64_t)ln->column);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t stack_id(uint64_t parent, uint64_t loc)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "S", 1) == 0);
	key_u64(&k, parent);
	key_u64(&k, loc);
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t attrs_id(const struct store_attr_set *a)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "A", 1) == 0);
	key_u64(&k, a->nlabels);
	for (uint32_t i = 0; i < a->nlabels; i++) {
		key_str(&k, a->labels[i].name);
		key_str(&k, a->labels[i].value);
	}
	key_u64(&k, a->has_link);
	if (a->has_link) {
		PROF_ASSERT(buf_add(&k, a->trace_id, 16) == 0);
		PROF_ASSERT(buf_add(&k, a->span_id, 8) == 0);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t series_id(const struct store_series *s)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "T", 1) == 0);
	key_str(&k, s->type);
	key_u64(&k, s->nlabels);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		key_str(&k, s->labels[i].name);
		key_str(&k, s->labels[i].value);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

/* --- ingest ------------------------------------------------------------- */

/* INSERT the RowBinary rows of @rows into table @table (released here). */
static int ch_insert(struct ch *c, const char *table, struct buf *rows, struct prof_err *err)
{
	char sql[160];
	int rc = 0;

	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", c->db, table);
	if (rows->len)
		rc = ch_call(c, sql, rows->p, rows->len, NULL, err);
	buf_release(rows);
	return rc;
}

static void rb_ds(struct buf *b, const struct ch *c)
{
	rb_cstr(b, c->dsraw);
}

static int ch_ingest(void *ctx, const struct model_profile *const *p, size_t n, int64_t now_ns,
		     struct prof_err *err)
{
	struct ch *c = ctx;
	struct store_head *h = store_head_new();
	const struct model_profile *d;
	const struct store_stack_node *nodes;
	const struct store_attr_set *sets;
	size_t nn, na;
	uint64_t *mid, *lid, *sid, *aid;
	uint8_t *used;
	struct buf rows[6];
	int rc = 0;

	for (int i = 0; i < 6; i++)
		buf_init(&rows[i], 0);
	/* The head derives series, labels, attribute sets and stacks exactly as
	 * the embedded store does; its tables become the rows. */
	store_head_add_batch(h, p, n, now_ns);
	d = store_head_dict(h);
	nodes = store_head_stacks(h, &nn);
	sets = store_head_attrs(h, &na);
	mid = xcalloc(d->mappings.n + 1, sizeof(*mid));
	lid = xcalloc(d->locations.n + 1, sizeof(*lid));
	sid = xcalloc(nn + 1, sizeof(*sid));
	aid = xcalloc(na + 1, sizeof(*aid));
	used = xcalloc(nn + 1, 1);
	for (size_t i = 1; i < d->mappings.n; i++) {
		const struct model_mapping *m = &d->mappings.v[i];

		mid[i] = mapping_id(d, m);
		rb_ds(&rows[0], c);
		rb_u64(&rows[0], mid[i]);
		rb_u64(&rows[0], m->memory_start);
		rb_u64(&rows[0], m->memory_limit);
		rb_u64(&rows[0], m->file_offset);
		rb_cstr(&rows[0], model_str(d, m->filename));
		rb_cstr(&rows[0], model_str(d, m->build_id));
		rb_u8(&rows[0], (uint8_t)model_mapping_flags(m));
	}
	for (size_t i = 1; i < d->locations.n; i++) {
		const struct model_location *l = &d->locations.v[i];
		struct buf *b = &rows[1];

		lid[i] = location_id(d, l, mid[l->mapping]);
		rb_ds(b, c);
		rb_u64(b, lid[i]);
		rb_u64(b, mid[l->mapping]);
		rb_u64(b, l->address);
		rb_u8(b, l->is_folded);
		rb_cstr(b, model_str(d, l->frame_type));
		for (int col = 0; col < 7; col++) {
			rb_varint(b, l->nlines);
			for (uint32_t k = 0; k < l->nlines; k++) {
				const struct model_line *ln = &d->lines.v[l->line_off + k];
				const struct model_function *f =
					ln->function ? &d->functions.v[ln->function] : NULL;

				switch (col) {
				case 0:
					rb_cstr(b, f ? model_str(d, f->name) : "");
					break;
				case 1:
					rb_cstr(b, f ? model_str(d, f->system_name) : "");
					break;
				case 2:
					rb_cstr(b, f ? model_str(d, f->filename) : "");
					break;
				case 3:
					rb_u64(b, f ? (uint64_t)f->start_line : 0);
					break;
				case 4:
					rb_u8(b, f != NULL);
					break;
				case 5:
					rb_u64(b, (uint64_t)ln->line);
					break;
				default:
					rb_u64(b, (uint64_t)ln->column);
					break;
				}
			}
		}
	}
	for (size_t i = 1; i < nn; i++)
		sid[i] = stack_id(sid[nodes[i].parent], lid[nodes[i].loc]);
	for (size_t i = 1; i < na; i++) {
		const struct store_attr_set *a = &sets[i];
		struct buf *b = &rows[2];

		aid[i] = attrs_id(a);
		rb_ds(b, c);
		rb_u64(b, aid[i]);
		rb_varint(b, a->nlabels);
		for (uint32_t k = 0; k < a->nlabels; k++)
			rb_cstr(b, a->labels[k].name);
		rb_varint(b, a->nlabels);
		for (uint32_t k = 0; k < a->nlabels; k++)
			rb_cstr(b, a->labels[k].value);
		rb_u8(b, a->has_link);
		rb_str(b, a->has_link ? (const char *)a->trace_id : "", a->has_link ? 16 : 0);
		rb_str(b, a->has_link ? (const char *)a->span_id : "", a->has_link ? 8 : 0);
	}
	for (size_t i = 0; i < store_head_nseries(h); i++) {
		const struct store_row *r;
		const struct store_series *s = store_head_series_at(h, i, &r);
		uint64_t id = series_id(s);
		struct buf *b = &rows[3];

		rb_ds(b, c);
		rb_u64(b, id);
		rb_cstr(b, s->type);
		rb_varint(b, s->nlabels);
		for (uint32_t k = 0; k < s->nlabels; k++)
			rb_cstr(b, s->labels[k].name);
		rb_varint(b, s->nlabels);
		for (uint32_t k = 0; k < s->nlabels; k++)
			rb_cstr(b, s->labels[k].value);
		rb_u64(b, (uint64_t)now_ns);
		rb_u32(b, (uint32_t)i);
		for (uint64_t k = 0; k < s->nrows; k++) {
			b = &rows[5];
			rb_ds(b, c);
			rb_u64(b, id);
			/* 1 ms, as the embedded store's blocks keep times (ts >= 0) */
			rb_u64(b, (uint64_t)(r[k].ts_ns - r[k].ts_ns % CH_TS_RESOLUTION_NS));
			rb_u64(b, sid[r[k].stack]);
			rb_u64(b, aid[r[k].attrs]);
			rb_u64(b, (uint64_t)r[k].value);
			rb_u64(b, (uint64_t)now_ns);
			rb_u32(b, (uint32_t)k);
			if (!used[r[k].stack]) {
				/* the stack's row: its locations, leaf first */
				struct buf *sb = &rows[4];
				size_t depth = 0;

				used[r[k].stack] = 1;
				for (uint32_t at = r[k].stack; at; at = nodes[at].parent)
					depth++;
				rb_ds(sb, c);
				rb_u64(sb, sid[r[k].stack]);
				rb_varint(sb, depth);
				for (uint32_t at = r[k].stack; at; at = nodes[at].parent)
					rb_u64(sb, lid[nodes[at].loc]);
				rb_u64(sb, (uint64_t)now_ns);
				rb_u32(sb, r[k].stack);
			}
		}
	}
	/* Dictionaries first: a sample read back always finds its stack. */
	rc = ch_insert(c, "mappings", &rows[0], err);
	if (!rc)
		rc = ch_insert(c, "locations", &rows[1], err);
	if (!rc)
		rc = ch_insert(c, "stacks", &rows[4], err);
	if (!rc)
		rc = ch_insert(c, "attrs", &rows[2], err);
	if (!rc)
		rc = ch_insert(c, "series", &rows[3], err);
	if (!rc)
		rc = ch_insert(c, "samples", &rows[5], err);
	for (int i = 0; i < 6; i++)
		buf_release(&rows[i]);
	free(mid);
	free(lid);
	free(sid);
	free(aid);
	free(used);
	store_head_free(h);
	return rc;
}

/* --- scans -------------------------------------------------------------- */

/* id -> index, sorted by id for bsearch. */
struct idx {
	uint64_t id;
	uint32_t at;
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static bool idx_find(const struct idx *v, size_t n, uint64_t id, uint32_t *at)
{
	struct idx key = { id, 0 };
	const struct idx *e = bsearch(&key, v, n, sizeof(*v), idx_cmp);

	if (e)
		*at = e->at;
	return e != NULL;
}

typedef VEC(struct idx) idx_vec;

static void idx_sort(idx_vec *v)
{
	if (v->n)
		qsort(v->v, v->n, sizeof(v->v[0]), idx_cmp);
}

/* The label condition "a label @name = @value" on the arrays names, values. */
static void sql_has_label(struct buf *b, const char *name, const char *value)
{
	PROF_ASSERT(buf_addstr(b, "arrayExists((k, v) -> k = ") == 0);
	sql_str(b, name, strlen(name));
	PROF_ASSERT(buf_addstr(b, " AND v = ") == 0);
	sql_str(b, value, strlen(value));
	PROF_ASSERT(buf_addstr(b, ", lnames, lvalues)") == 0);
}

/* Does some attribute set of the dataset have a label @name? (@keys sorted) */
static bool is_attr_key(char **keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], name))
			return true;
	return false;
}

struct scan_q {
	struct buf samples_where; /* WHERE of samples: dataset, range, series */
	char **keys;		  /* attribute keys of the dataset */
	size_t nkeys;
	bool row_filters; /* some matcher or the link filter applies per row */
};

static void scan_q_release(struct scan_q *sq)
{
	buf_release(&sq->samples_where);
	for (size_t i = 0; i < sq->nkeys; i++)
		free(sq->keys[i]);
	free(sq->keys);
}

static int load_attr_keys(struct ch *c, struct scan_q *sq, struct prof_err *err)
{
	struct buf sql = BUF_INIT, ans = BUF_INIT;
	struct rd r;
	int rc;

	PROF_ASSERT(buf_addf(&sql,
			     "SELECT DISTINCT arrayJoin(lnames) FROM %s.attrs WHERE dataset = ",
			     c->db) == 0);
	PROF_ASSERT(buf_addstr(&sql, c->ds) == 0);
	PROF_ASSERT(buf_addstr(&sql, " FORMAT RowBinary") == 0);
	rc = ch_sql(c, &sql, &ans, err);
	if (rc)
		return rc;
	r = (struct rd){ (const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.len,
			 false };
	while (rd_more(&r)) {
		size_t n;
		const char *s = rd_str(&r, &n);

		if (r.bad)
			break;
		sq->keys = xrealloc(sq->keys, (sq->nkeys + 1) * sizeof(*sq->keys));
		sq->keys[sq->nkeys++] = xstrndup(s, n);
	}
	buf_release(&ans);
	if (r.bad)
		return prof_err_set(err, -EIO, -1, "%s: malformed answer (attribute keys)",
				    c->desc);
	return 0;
}

/* Build the pushed-down WHERE of @q into sq->samples_where. */
static int scan_where(struct ch *c, const struct store_query *q, const struct store_link_filter *lf,
		      struct scan_q *sq, struct prof_err *err)
{
	struct buf *w = &sq->samples_where;
	int64_t from = PROF_MAX(q->from_ns, (int64_t)0);
	int rc;

	buf_init(w, 0);
	if (q->nm) {
		rc = load_attr_keys(c, sq, err);
		if (rc)
			return rc;
	}
	sq->row_filters = lf && (lf->trace_id || lf->span_id);
	PROF_ASSERT(buf_addstr(w, "dataset = ") == 0);
	PROF_ASSERT(buf_addstr(w, c->ds) == 0);
	PROF_ASSERT(buf_addf(w, " AND ts >= %lld AND ts <= %lld", (long long)from,
			     (long long)q->to_ns) == 0);
	PROF_ASSERT(buf_addf(w,
			     " AND series_id IN (SELECT series_id FROM %s.series WHERE dataset = ",
			     c->db) == 0);
	PROF_ASSERT(buf_addstr(w, c->ds) == 0);
	if (q->type) {
		PROF_ASSERT(buf_addstr(w, " AND type = ") == 0);
		sql_str(w, q->type, strlen(q->type));
	}
	for (size_t i = 0; i < q->nm; i++) {
		const struct store_matcher *m = &q->m[i];
		const char *alias = store_label_alias(m->name);

		if (is_attr_key(sq->keys, sq->nkeys, m->name) ||
		    (alias && is_attr_key(sq->keys, sq->nkeys, alias))) {
			sq->row_filters = true; /* evaluated per row, in profd */
			continue;
		}
		/* Pushed down: equality on a non-empty value (a superset of what
		 * profd's own evaluation keeps, which runs again on the rows). */
		if (m->op != STORE_MATCH_EQ || !m->value[0])
			continue;
		PROF_ASSERT(buf_addstr(w, " AND (") == 0);
		sql_has_label(w, m->name, m->value);
		if (alias) {
			PROF_ASSERT(buf_addstr(w, " OR ") == 0);
			sql_has_label(w, alias, m->value);
		}
		PROF_ASSERT(buf_addstr(w, ")") == 0);
	}
	PROF_ASSERT(buf_addstr(w, ")") == 0);
	return 0;
}

/* A query's answer: SQL with %1$s the db and %2$s the samples WHERE. */
static int scan_fetch(struct ch *c, const struct scan_q *sq, const char *fmt, struct buf *ans,
		      struct prof_err *err)
{
	struct buf sql = BUF_INIT;
	const char *w = sq->samples_where.p ? sq->samples_where.p : "1";
	/* fmt names %s pairs in order: db, where, ... expanded by hand to
	 * avoid positional printf: each "@D" is the db, "@W" the where,
	 * "@S" the dataset literal */
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '@' && (p[1] == 'D' || p[1] == 'W' || p[1] == 'S')) {
			PROF_ASSERT(buf_addstr(&sql, p[1] == 'D'   ? c->db
						     : p[1] == 'W' ? w
								   : c->ds) == 0);
			p++;
			continue;
		}
		PROF_ASSERT(buf_add(&sql, p, 1) == 0);
	}
	PROF_ASSERT(buf_addstr(&sql, " FORMAT RowBinary") == 0);
	return ch_sql(c, &sql, ans, err);
}

static struct rd rd_of(const struct buf *b)
{
	return (struct rd){ (const unsigned char *)b->p, (const unsigned char *)b->p + b->len,
			    false };
}

/* What a scan rebuilt: a head of its own and the maps from ClickHouse ids. */
struct scan_build {
	struct store_head *h;
	idx_vec series; /* series_id -> index into ser */
	VEC(struct series *) ser;
	idx_vec stacks; /* stack_id -> head node */
	idx_vec attrs;	/* attrs_id -> head set */
	bool no_stacks; /* stacks not read: every row's stack is node 0 */
};

static void scan_build_release(struct scan_build *b)
{
	VEC_FREE(&b->series);
	VEC_FREE(&b->ser);
	VEC_FREE(&b->stacks);
	VEC_FREE(&b->attrs);
	store_head_free(b->h);
}

static int bad_answer(struct ch *c, const char *what, struct prof_err *err)
{
	return prof_err_set(err, -EIO, -1, "%s: malformed answer (%s)", c->desc, what);
}

/* The series that have rows in the pushed-down selection. */
static int build_series(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	VEC(struct store_label) lab = { 0 };
	int rc =
		scan_fetch(c, sq,
			   "SELECT series_id, type, lnames, lvalues FROM @D.series WHERE dataset = "
			   "@S AND series_id IN (SELECT DISTINCT series_id FROM @D.samples WHERE "
			   "@W) ORDER BY first_ns, first_ord LIMIT 1 BY series_id",
			   &ans, err);

	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r);
		size_t tn, nn, nv;
		const char *t = rd_str(&r, &tn);
		char *type = xstrndup(t, tn);
		char **names, **values;

		nn = rd_count(&r);
		names = xcalloc(nn + 1, sizeof(*names));
		for (size_t i = 0; i < nn; i++) {
			size_t n;
			const char *s = rd_str(&r, &n);

			names[i] = xstrndup(s, n);
		}
		nv = rd_count(&r);
		values = xcalloc(nv + 1, sizeof(*values));
		for (size_t i = 0; i < nv; i++) {
			size_t n;
			const char *s = rd_str(&r, &n);

			values[i] = xstrndup(s, n);
		}
		if (!r.bad && nn == nv) {
			struct idx e = { id, (uint32_t)b->ser.n };

			lab.n = 0;
			for (size_t i = 0; i < nn; i++) {
				struct store_label l = { names[i], values[i] };

				VEC_PUSH(&lab, l);
			}
			VEC_PUSH(&b->ser, head_series_labels(b->h, type, lab.v, nn));
			VEC_PUSH(&b->series, e);
		} else {
			r.bad = true;
		}
		for (size_t i = 0; i < nn; i++)
			free(names[i]);
		for (size_t i = 0; i < nv; i++)
			free(values[i]);
		free(names);
		free(values);
		free(type);
	}
	VEC_FREE(&lab);
	buf_release(&ans);
	if (r.bad)
		return bad_answer(c, "series", err);
	idx_sort(&b->series);
	return 0;
}

/* Mappings, locations and stacks of the selected rows into the head's dictionary. */
static int build_stacks(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct model_profile d;
	idx_vec maps = { 0 }, locs = { 0 }, leaf = { 0 };
	VEC(struct store_stack_node) nodes = { 0 };
	VEC(struct model_line) lines = { 0 };
	uint32_t *map = NULL;
	struct rd r;
	int rc;

	model_profile_init(&d);
	rc = scan_fetch(c, sq,
			"SELECT mapping_id, mem_start, mem_limit, file_offset, filename, build_id, "
			"flags FROM @D.mappings WHERE dataset = @S AND mapping_id IN (SELECT "
			"mapping_id FROM @D.locations WHERE dataset = @S AND loc_id IN (SELECT "
			"arrayJoin(locs) FROM @D.stacks WHERE dataset = @S AND stack_id IN (SELECT "
			"DISTINCT stack_id FROM @D.samples WHERE @W))) LIMIT 1 BY mapping_id",
			&ans, err);
	if (rc)
		goto out;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		struct model_mapping m = { 0 };
		uint64_t id = rd_u64(&r);
		size_t n;
		const char *s;
		unsigned fl;

		m.memory_start = rd_u64(&r);
		m.memory_limit = rd_u64(&r);
		m.file_offset = rd_u64(&r);
		s = rd_str(&r, &n);
		m.filename = model_intern_n(&d, s, n);
		s = rd_str(&r, &n);
		m.build_id = model_intern_n(&d, s, n);
		fl = rd_u8(&r);
		m.has_functions = fl & 1;
		m.has_filenames = fl >> 1 & 1;
		m.has_line_numbers = fl >> 2 & 1;
		m.has_inline_frames = fl >> 3 & 1;
		if (r.bad)
			break;
		struct idx e = { id, model_mapping_add(&d, &m) };

		VEC_PUSH(&maps, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "mappings", err);
		goto out;
	}
	idx_sort(&maps);
	rc = scan_fetch(
		c, sq,
		"SELECT loc_id, mapping_id, address, folded, frame_type, fn_name, "
		"fn_system_name, fn_file, fn_start_line, has_fn, line, col FROM "
		"@D.locations WHERE dataset = @S AND loc_id IN (SELECT arrayJoin(locs) FROM "
		"@D.stacks WHERE dataset = @S AND stack_id IN (SELECT DISTINCT stack_id FROM "
		"@D.samples WHERE @W)) LIMIT 1 BY loc_id",
		&ans, err);
	if (rc)
		goto out;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r), mid = rd_u64(&r), addr = rd_u64(&r);
		uint8_t folded = rd_u8(&r);
		size_t n, nl = 0;
		const char *s = rd_str(&r, &n);
		uint32_t ft = n ? model_intern_n(&d, s, n) : 0, mapping = 0;
		struct model_function f[1];
		/* columns of lines: 7 arrays of the same length */
		VEC(struct model_function) fns = { 0 };
		VEC(uint8_t) has = { 0 };

		lines.n = 0;
		for (int col = 0; col < 7 && !r.bad; col++) {
			size_t cnt = rd_count(&r);

			if (col == 0)
				nl = cnt;
			else if (cnt != nl)
				r.bad = true;
			for (size_t k = 0; k < cnt && !r.bad; k++) {
				if (col == 0) {
					struct model_function z = { 0 };
					struct model_line lz = { 0 };

					VEC_PUSH(&fns, z);
					VEC_PUSH(&lines, lz);
					VEC_PUSH(&has, 0);
				}
				switch (col) {
				case 0:
				case 1:
				case 2:
					s = rd_str(&r, &n);
					*(col == 0   ? &fns.v[k].name
					  : col == 1 ? &fns.v[k].system_name
						     : &fns.v[k].filename) =
						model_intern_n(&d, s, n);
					break;
				case 3:
					fns.v[k].start_line = (int64_t)rd_u64(&r);
					break;
				case 4:
					has.v[k] = rd_u8(&r);
					break;
				case 5:
					lines.v[k].line = (int64_t)rd_u64(&r);
					break;
				default:
					lines.v[k].column = (int64_t)rd_u64(&r);
					break;
				}
			}
		}
		for (size_t k = 0; k < nl && !r.bad; k++) {
			f[0] = fns.v[k];
			lines.v[k].function =
				has.v[k] ? model_function_intern(&d, f->name, f->system_name,
								 f->filename, f->start_line)
					 : 0;
		}
		VEC_FREE(&fns);
		VEC_FREE(&has);
		if (r.bad)
			break;
		if (mid && !idx_find(maps.v, maps.n, mid, &mapping)) {
			r.bad = true;
			break;
		}
		uint32_t at = model_location_add(&d, mapping, addr, lines.v, (uint32_t)nl);

		d.locations.v[at].is_folded = folded;
		d.locations.v[at].frame_type = ft;
		struct idx e = { id, at };

		VEC_PUSH(&locs, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "locations", err);
		goto out;
	}
	idx_sort(&locs);
	rc = scan_fetch(
		c, sq,
		"SELECT stack_id, locs FROM @D.stacks WHERE dataset = @S AND stack_id IN "
		"(SELECT DISTINCT stack_id FROM @D.samples WHERE @W) ORDER BY first_ns, first_ord "
		"LIMIT 1 BY stack_id",
		&ans, err);
	if (rc)
		goto out;
	{
		struct store_stack_node root = { 0, 0 };

		VEC_PUSH(&nodes, root);
	}
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r);
		size_t depth = rd_count(&r);
		uint32_t *path = xcalloc(depth + 1, sizeof(*path));
		uint32_t parent = 0;

		for (size_t k = 0; k < depth && !r.bad; k++)
			if (!idx_find(locs.v, locs.n, rd_u64(&r), &path[k]))
				r.bad = true;
		for (size_t k = depth; k-- > 0 && !r.bad;) {
			struct store_stack_node nd = { parent, path[k] };

			VEC_PUSH(&nodes, nd);
			parent = (uint32_t)(nodes.n - 1);
		}
		free(path);
		if (r.bad)
			break;
		struct idx e = { id, parent };

		VEC_PUSH(&leaf, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "stacks", err);
		goto out;
	}
	map = xcalloc(nodes.n + 1, sizeof(*map));
	rc = store_head_import(b->h, &d, nodes.v, nodes.n, map);
	if (rc) {
		rc = prof_err_set(err, rc, -1, "%s: stacks read back do not check", c->desc);
		goto out;
	}
	for (size_t i = 0; i < leaf.n; i++) {
		struct idx e = { leaf.v[i].id, map[leaf.v[i].at] };

		VEC_PUSH(&b->stacks, e);
	}
	idx_sort(&b->stacks);
out:
	free(map);
	buf_release(&ans);
	VEC_FREE(&maps);
	VEC_FREE(&locs);
	VEC_FREE(&leaf);
	VEC_FREE(&nodes);
	VEC_FREE(&lines);
	model_profile_release(&d);
	return rc;
}

/* The attribute sets of the selected rows into the head's table. */
static int build_attrs(struct ch *c, const struct scan_q *sq, struct scan_build *b,
		       struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	VEC(struct store_attr_set) sets = { 0 };
	VEC(char *) strs = { 0 };
	idx_vec ids = { 0 };
	uint32_t *map = NULL;
	struct rd r;
	int rc = scan_fetch(c, sq,
			    "SELECT attrs_id, lnames, lvalues, has_link, trace_id, span_id FROM "
			    "@D.attrs WHERE dataset = @S AND attrs_id IN (SELECT DISTINCT attrs_id "
			    "FROM @D.samples WHERE @W) LIMIT 1 BY attrs_id",
			    &ans, err);

	if (rc)
		return rc;
	{
		struct store_attr_set z = { 0 };

		VEC_PUSH(&sets, z);
	}
	r = rd_of(&ans);
	while (rd_more(&r)) {
		struct store_attr_set a = { 0 };
		uint64_t id = rd_u64(&r);
		size_t nn = rd_count(&r), nv, n;
		struct store_label *l = xcalloc(nn + 1, sizeof(*l));
		const char *s;

		for (size_t k = 0; k < nn; k++) {
			s = rd_str(&r, &n);
			l[k].name = xstrndup(s, n);
			VEC_PUSH(&strs, (char *)l[k].name);
		}
		nv = rd_count(&r);
		for (size_t k = 0; k < nv && k < nn; k++) {
			s = rd_str(&r, &n);
			l[k].value = xstrndup(s, n);
			VEC_PUSH(&strs, (char *)l[k].value);
		}
		a.labels = l;
		a.nlabels = (uint32_t)nn;
		a.has_link = rd_u8(&r);
		s = rd_str(&r, &n);
		if (a.has_link && n == 16)
			memcpy(a.trace_id, s, 16);
		else if (a.has_link)
			r.bad = true;
		s = rd_str(&r, &n);
		if (a.has_link && n == 8)
			memcpy(a.span_id, s, 8);
		else if (a.has_link)
			r.bad = true;
		if (nv != nn)
			r.bad = true;
		if (r.bad) {
			for (size_t k = 0; k < nn; k++)
				if (!l[k].value)
					l[k].value = "";
			VEC_PUSH(&sets, a);
			break;
		}
		struct idx e = { id, (uint32_t)sets.n };

		VEC_PUSH(&sets, a);
		VEC_PUSH(&ids, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "attribute sets", err);
		goto out;
	}
	map = xcalloc(sets.n + 1, sizeof(*map));
	store_head_import_attrs(b->h, sets.v, sets.n, map);
	for (size_t i = 0; i < ids.n; i++) {
		struct idx e = { ids.v[i].id, map[ids.v[i].at] };

		VEC_PUSH(&b->attrs, e);
	}
	idx_sort(&b->attrs);
out:
	for (size_t i = 1; i < sets.n; i++)
		free((void *)sets.v[i].labels);
	for (size_t i = 0; i < strs.n; i++)
		free(strs.v[i]);
	VEC_FREE(&strs);
	VEC_FREE(&sets);
	VEC_FREE(&ids);
	free(map);
	buf_release(&ans);
	return rc;
}

/* The wrapped visitor: the head's source under a unique id. */
struct wrap {
	const struct store_visitor *v;
	uint64_t id;
};

static const struct store_source *wrap_src(const struct wrap *w, const struct store_source *src,
					   struct store_source *tmp)
{
	*tmp = *src;
	tmp->id = w->id;
	return tmp;
}

static int w_begin(void *arg, const struct store_source *src)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->source_begin ? w->v->source_begin(w->v->arg, wrap_src(w, src, &t)) : 0;
}

static int w_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->series ? w->v->series(w->v->arg, wrap_src(w, src, &t), s) : 0;
}

static int w_rows(void *arg, const struct store_source *src, const struct store_series *s,
		  const struct store_row *rows, size_t n)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->rows(w->v->arg, wrap_src(w, src, &t), s, rows, n);
}

static int w_totals(void *arg, const struct store_source *src, const struct store_stack_total *tt,
		    size_t n, uint64_t nrows)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->totals(w->v->arg, wrap_src(w, src, &t), tt, n, nrows);
}

static int w_end(void *arg, const struct store_source *src)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->source_end ? w->v->source_end(w->v->arg, wrap_src(w, src, &t)) : 0;
}

static int w_steps(void *arg, const struct store_source *src, const struct store_series *s,
		   const struct store_step_sum *v, size_t n)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->steps(w->v->arg, wrap_src(w, src, &t), s, v, n);
}

static bool find_ser(const struct scan_build *b, uint64_t id, struct series **out)
{
	uint32_t at;

	if (!idx_find(b->series.v, b->series.n, id, &at))
		return false;
	*out = b->ser.v[at];
	return true;
}

/* One (series, stack) group of a totals scan, as ClickHouse summed it. */
struct group {
	uint32_t ser;  /* index into scan_build.ser (creation order) */
	uint32_t node; /* head node */
	int64_t sum;
	uint64_t rows;
	int64_t lo, hi;	   /* time range of its rows */
	uint64_t first_ns; /* its first row: ingest time, then order in the ingest */
	uint32_t first_ord;
};

/* Series by creation, then each series' stacks by their first row: the
 * order a head's totals scan first touches the stacks in. */
static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->ser != y->ser)
		return x->ser < y->ser ? -1 : 1;
	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return x->first_ord < y->first_ord ? -1 : x->first_ord > y->first_ord;
}

/*
 * Totals scan without per-row filters: ClickHouse sums per (series,
 * stack), with each group's first row; profd keeps the series its
 * matchers select and makes the one totals call a head's totals scan
 * makes: the same sums, row counts and entry order.
 */
static int scan_totals_direct(struct ch *c, const struct store_query *q, const struct scan_q *sq,
			      struct scan_build *b, const struct store_visitor *v,
			      struct store_scan_stats *st, struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	VEC(struct group) g = { 0 };
	VEC(struct store_stack_total) tot = { 0 };
	uint32_t *slot = NULL; /* head node -> index in tot + 1 */
	uint64_t nrows = 0;
	size_t nn, nattrs, nsel = 0;
	bool *sel = NULL;
	int rc = scan_fetch(
		c, sq,
		"SELECT series_id, stack_id, sum(s), sum(n), min(lo), max(hi), "
		"min(ingest_ns), argMin(o, ingest_ns) FROM (SELECT series_id, stack_id, "
		"ingest_ns, sum(value) AS s, count() AS n, min(ts) AS lo, max(ts) AS hi, "
		"min(ord) AS o FROM @D.samples WHERE @W GROUP BY series_id, stack_id, "
		"ingest_ns) GROUP BY series_id, stack_id",
		&ans, err);

	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t sid = rd_u64(&r), kid = rd_u64(&r);
		struct group e;
		uint32_t at;

		e.sum = (int64_t)rd_u64(&r);
		e.rows = rd_u64(&r);
		e.lo = (int64_t)rd_u64(&r);
		e.hi = (int64_t)rd_u64(&r);
		e.first_ns = rd_u64(&r);
		e.first_ord = (uint32_t)rd_u8(&r);
		e.first_ord |= (uint32_t)rd_u8(&r) << 8;
		e.first_ord |= (uint32_t)rd_u8(&r) << 16;
		e.first_ord |= (uint32_t)rd_u8(&r) << 24;
		if (r.bad)
			break;
		if (!idx_find(b->series.v, b->series.n, sid, &at) ||
		    !idx_find(b->stacks.v, b->stacks.n, kid, &e.node))
			continue; /* ingested after the series / stacks were read */
		e.ser = at;
		VEC_PUSH(&g, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "totals", err);
		goto out;
	}
	if (g.n)
		qsort(g.v, g.n, sizeof(g.v[0]), group_cmp);
	/* The series' time ranges (rows at min and max), so selection by
	 * range is the head's. */
	for (size_t i = 0; i < g.n; i++) {
		struct series *se = b->ser.v[g.v[i].ser];
		struct store_row lo = { g.v[i].lo, 0, g.v[i].node, 0 };
		struct store_row hi = { g.v[i].hi, 0, g.v[i].node, 0 };

		head_series_push(b->h, se, &lo);
		if (g.v[i].hi != g.v[i].lo)
			head_series_push(b->h, se, &hi);
	}
	store_head_rdlock(b->h);
	const struct store_stack_node *stacks = store_head_stacks(b->h, &nn);
	const struct store_attr_set *attrs = store_head_attrs(b->h, &nattrs);
	struct store_source src = {
		.id = __atomic_add_fetch(&ch_source_seq, 1, __ATOMIC_RELAXED),
		.is_head = true,
		.dict = store_head_dict(b->h),
		.stacks = stacks,
		.nstacks = nn,
		.attrs = attrs,
		.nattrs = nattrs,
	};
	sel = xcalloc(b->ser.n + 1, sizeof(*sel));
	slot = xcalloc(nn + 1, sizeof(*slot));
	for (size_t i = 0; i < b->ser.n; i++) {
		sel[i] = head_series_selected(b->ser.v[i], q->type, q->m, q->nm, q->from_ns,
					      q->to_ns);
		nsel += sel[i];
	}
	if (nsel) {
		st->sources++;
		rc = v->source_begin ? v->source_begin(v->arg, &src) : 0;
		for (size_t i = 0; i < b->ser.n && !rc; i++) {
			if (!sel[i])
				continue;
			st->series++;
			if (v->series)
				rc = v->series(v->arg, &src, &b->ser.v[i]->pub);
		}
		for (size_t i = 0; i < g.n && !rc; i++) {
			const struct group *e = &g.v[i];

			if (!sel[e->ser])
				continue;
			if (!slot[e->node]) {
				struct store_stack_total t = { e->node, 0, 0 };

				VEC_PUSH(&tot, t);
				slot[e->node] = (uint32_t)tot.n;
			}
			struct store_stack_total *t = &tot.v[slot[e->node] - 1];

			t->total = prof_add_sat(t->total, e->sum);
			t->rows += e->rows;
			nrows += e->rows;
		}
		st->rows += nrows;
		if (!rc && tot.n)
			rc = v->totals(v->arg, &src, tot.v, tot.n, nrows);
		if (!rc && v->source_end)
			rc = v->source_end(v->arg, &src);
	}
	store_head_rdunlock(b->h);
out:
	VEC_FREE(&g);
	VEC_FREE(&tot);
	free(slot);
	free(sel);
	buf_release(&ans);
	return rc;
}

typedef VEC(struct store_row) row_vec;

/*
 * The rows of one series (in ingest order) into the head in the order a
 * block keeps them, by time, then stack (first stored first), stably:
 * what the embedded store's answers come from once its head is written.
 */
static void flush_run(struct scan_build *b, struct series *se, row_vec *run)
{
	if (se && run->n) {
		store_rows_sort(run->v, run->n);
		for (size_t i = 0; i < run->n; i++)
			head_series_push(b->h, se, &run->v[i]);
	}
	run->n = 0;
}

/* Rows (or, for a series-only scan, each series' first and last row) into the head. */
static int scan_fill_rows(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			  bool series_only, struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	row_vec run = { 0 };
	struct series *run_se = NULL;
	int rc = scan_fetch(
		c, sq,
		series_only ? "SELECT series_id, argMin(stack_id, ts), min(ts), argMax(stack_id, "
			      "ts), max(ts) FROM @D.samples WHERE @W GROUP BY series_id"
			    : "SELECT series_id, ts, stack_id, attrs_id, value FROM @D.samples "
			      "WHERE @W ORDER BY series_id, ingest_ns, ord",
		&ans, err);

	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t sid = rd_u64(&r);
		struct series *se;
		uint32_t node = 0, set = 0;

		if (series_only) {
			uint64_t k0 = rd_u64(&r);
			int64_t lo = (int64_t)rd_u64(&r);
			uint64_t k1 = rd_u64(&r);
			int64_t hi = (int64_t)rd_u64(&r);
			uint32_t n0 = 0, n1 = 0;

			if (r.bad || !find_ser(b, sid, &se))
				continue;
			/* stacks are not read in this form: node 0 */
			(void)k0;
			(void)k1;
			struct store_row a = { lo, 0, n0, 0 }, z = { hi, 0, n1, 0 };

			head_series_push(b->h, se, &a);
			if (hi != lo)
				head_series_push(b->h, se, &z);
			continue;
		}
		int64_t ts = (int64_t)rd_u64(&r);
		uint64_t kid = rd_u64(&r), aid = rd_u64(&r);
		int64_t val = (int64_t)rd_u64(&r);

		if (r.bad)
			break;
		if (!find_ser(b, sid, &se) ||
		    (!b->no_stacks && !idx_find(b->stacks.v, b->stacks.n, kid, &node)))
			continue; /* ingested after the series / stacks were read */
		if (aid && !idx_find(b->attrs.v, b->attrs.n, aid, &set))
			continue;
		struct store_row row = { ts, val, node, set };

		if (se != run_se)
			flush_run(b, run_se, &run);
		run_se = se;
		VEC_PUSH(&run, row);
	}
	flush_run(b, run_se, &run);
	VEC_FREE(&run);
	buf_release(&ans);
	if (r.bad)
		return bad_answer(c, "rows", err);
	return 0;
}

static int ch_scan(void *ctx, const struct store_query *q, const struct store_link_filter *lf,
		   const struct store_visitor *v, struct store_scan_stats *st, struct prof_err *err)
{
	struct ch *c = ctx;
	struct scan_q sq = { 0 };
	struct scan_build b = { .h = store_head_new() };
	struct store_scan_stats dummy;
	bool series_only = !v->rows && !v->totals;
	int rc;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (q->to_ns < 0 || q->to_ns < q->from_ns) {
		rc = 0;
		goto out;
	}
	rc = scan_where(c, q, lf, &sq, err);
	if (!rc)
		rc = build_series(c, &sq, &b, err);
	if (rc || !b.ser.n)
		goto out;
	b.no_stacks = series_only || v->rows_no_stacks;
	if (!b.no_stacks)
		rc = build_stacks(c, &sq, &b, err);
	if (!rc && (v->rows || sq.row_filters || series_only))
		rc = build_attrs(c, &sq, &b, err);
	if (rc)
		goto out;
	if (v->totals && !sq.row_filters) {
		rc = scan_totals_direct(c, q, &sq, &b, v, st, err);
		goto out;
	}
	rc = scan_fill_rows(c, &sq, &b, series_only, err);
	if (!rc) {
		struct store *tmp;
		struct wrap w = { v, __atomic_add_fetch(&ch_source_seq, 1, __ATOMIC_RELAXED) };
		struct store_visitor wv = *v;

		wv.arg = &w;
		wv.source_begin = w_begin;
		wv.series = w_series;
		wv.rows = v->rows ? w_rows : NULL;
		wv.totals = v->totals ? w_totals : NULL;
		wv.source_end = w_end;
		wv.steps = v->steps ? w_steps : NULL;
		store_open_head(b.h, &tmp);
		rc = store_scan_ex(tmp, q, lf, &wv, st, err);
		store_close(tmp);
	}
out:
	scan_q_release(&sq);
	scan_build_release(&b);
	return rc;
}

static int ch_types(void *ctx, int64_t from_ns, int64_t to_ns,
		    int (*fn)(void *arg, const char *type), void *arg)
{
	struct ch *c = ctx;
	struct buf sql = BUF_INIT, ans = BUF_INIT;
	struct prof_err err;
	struct rd r;
	int rc;

	if (to_ns < 0 || to_ns < from_ns)
		return 0;
	prof_err_init(&err);
	PROF_ASSERT(buf_addf(&sql,
			     "SELECT DISTINCT type FROM %s.series WHERE dataset = %s AND "
			     "series_id IN (SELECT DISTINCT series_id FROM %s.samples WHERE "
			     "dataset = %s AND ts >= %lld AND ts <= %lld) ORDER BY type "
			     "FORMAT RowBinary",
			     c->db, c->ds, c->db, c->ds, (long long)PROF_MAX(from_ns, (int64_t)0),
			     (long long)to_ns) == 0);
	rc = ch_sql(c, &sql, &ans, &err);
	if (rc) {
		log_error("store %s: types: %s", c->desc, err.msg);
		return rc;
	}
	r = rd_of(&ans);
	while (!rc && rd_more(&r)) {
		size_t n;
		const char *s = rd_str(&r, &n);
		char *t;

		if (r.bad)
			break;
		t = xstrndup(s, n);
		rc = fn(arg, t);
		free(t);
	}
	buf_release(&ans);
	return rc;
}

static void ch_free(struct ch *c)
{
	if (!c)
		return;
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
	.ingest = ch_ingest,
	.scan = ch_scan,
	.types = ch_types,
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

int store_open_clickhouse(const char *url, const char *dataset, struct store **out,
			  struct prof_err *err)
{
	struct ch *c = xcalloc(1, sizeof(*c));
	struct buf lit = BUF_INIT;
	int rc;

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
	if (rc) {
		ch_free(c);
		return rc;
	}
	log_info("store: dataset %s in %s (schema %d)", dataset, c->desc, STORE_CH_SCHEMA_VERSION);
	return store_open_backend(&ch_backend, c, c->desc, out);
}
