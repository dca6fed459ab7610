// SPDX-License-Identifier: Apache-2.0
/*
 * tenant.c - datasets (one store each) and token authorization; see
 * tenant.h.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "server/route.h"
#include "store/clickhouse.h"
#include "server/tenant.h"

#include <strings.h>
#include <sys/stat.h>

bool server_secret_eq(const char *a, size_t na, const char *b, size_t nb)
{
	volatile unsigned char diff = (unsigned char)(na != nb);

	/* Walk the secret's length whatever @a is; index @a modulo its
	 * length so a short or empty input reads in bounds. */
	for (size_t i = 0; i < nb; i++) {
		unsigned char x = na ? (unsigned char)a[i % na] : 0;

		diff |= (unsigned char)(x ^ (unsigned char)b[i]);
	}
	return na > 0 && diff == 0;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decode base64 @s into @out (at most @cap - 1 bytes, NUL-terminated); -1 on bad input. */
static ssize_t b64dec(const char *s, char *out, size_t cap)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;

	for (; *s && *s != '='; s++) {
		int v = b64val((unsigned char)*s);

		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n + 1 >= cap)
				return -1;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	return (ssize_t)n;
}

/*
 * The secret presented in an Authorization header value: a pointer into
 * @hdr or into @tmp (Basic). NULL when the header is absent or not one
 * of the two schemes.
 */
static const char *credential(const char *hdr, char *tmp, size_t tmpsz, size_t *len)
{
	if (!hdr)
		return NULL;
	while (*hdr == ' ')
		hdr++;
	if (!strncasecmp(hdr, "Bearer ", 7)) {
		hdr += 7;
		while (*hdr == ' ')
			hdr++;
		*len = strcspn(hdr, " \t\r\n");
		return *len ? hdr : NULL;
	}
	if (!strncasecmp(hdr, "Basic ", 6)) {
		ssize_t n;
		char *colon;

		hdr += 6;
		while (*hdr == ' ')
			hdr++;
		n = b64dec(hdr, tmp, tmpsz);
		if (n <= 0)
			return NULL;
		colon = memchr(tmp, ':', (size_t)n);
		if (colon && colon[1]) {
			*len = (size_t)(tmp + n - (colon + 1));
			return colon + 1;
		}
		*len = colon ? (size_t)(colon - tmp) : (size_t)n;
		return *len ? tmp : NULL;
	}
	return NULL;
}

/* The token whose secret is presented in @hdr, or NULL; constant time per token. */
static const struct server_token_conf *find_token(const struct server_conf *c, const char *hdr)
{
	char tmp[1024];
	size_t len = 0;
	const char *cred = credential(hdr, tmp, sizeof(tmp), &len);
	const struct server_token_conf *found = NULL;

	if (!cred)
		return NULL;
	for (size_t i = 0; i < c->ntokens; i++) {
		bool eq = server_secret_eq(cred, len, c->tokens[i].secret, c->tokens[i].secret_len);

		/* No early exit: every token is compared. */
		if (eq && !found)
			found = &c->tokens[i];
	}
	memset(tmp, 0, sizeof(tmp));
	return found;
}

static bool token_lists(const struct server_token_conf *t, const char *ds, bool *wildcard)
{
	bool named = false;

	*wildcard = false;
	for (size_t i = 0; i < t->ndatasets; i++) {
		if (!strcmp(t->datasets[i], "*"))
			*wildcard = true;
		else if (!strcmp(t->datasets[i], ds))
			named = true;
	}
	return named || *wildcard;
}

static const char *perm_name(unsigned perm)
{
	return perm == SERVER_PERM_INGEST    ? "ingest"
	       : perm == SERVER_PERM_QUERY   ? "query"
	       : perm == SERVER_PERM_METRICS ? "read metrics"
					     : "use";
}

void server_authorize_global(const struct server_tenants *t, const char *authorization,
			     unsigned perm, struct server_auth *out)
{
	const struct server_token_conf *tok;

	memset(out, 0, sizeof(*out));
	out->token = "-";
	if (!t->conf->ntokens)
		return;
	tok = find_token(t->conf, authorization);
	if (!tok) {
		out->status = 401;
		snprintf(out->msg, sizeof(out->msg), "%s",
			 authorization ? "the bearer token is not valid"
				       : "authentication required: send Authorization: Bearer "
					 "<token>");
		return;
	}
	out->token = tok->name;
	if (!(tok->perms & perm)) {
		out->status = 403;
		snprintf(out->msg, sizeof(out->msg),
			 "token '%s' may not %s (permissions of the token)", tok->name,
			 perm_name(perm));
	}
}

void server_authorize(const struct server_tenants *t, const char *authorization,
		      const char *dataset, unsigned perm, struct server_auth *out)
{
	const struct server_conf *c = t->conf;
	const struct server_token_conf *tok = NULL;
	const char *name = dataset && *dataset ? dataset : NULL;
	bool wildcard = false;

	memset(out, 0, sizeof(*out));
	out->token = "-";
	if (c->ntokens) {
		tok = find_token(c, authorization);
		if (!tok) {
			out->status = 401;
			snprintf(out->msg, sizeof(out->msg), "%s",
				 authorization ? "the bearer token is not valid"
					       : "authentication required: send Authorization: "
						 "Bearer <token>");
			return;
		}
		out->token = tok->name;
		if (!name) {
			if (tok->default_dataset)
				name = tok->default_dataset;
			else if (tok->ndatasets == 1 && strcmp(tok->datasets[0], "*"))
				name = tok->datasets[0];
			else
				name = c->default_dataset;
		}
		if (!token_lists(tok, name, &wildcard)) {
			out->status = 403;
			snprintf(out->msg, sizeof(out->msg),
				 "token '%s' has no access to dataset '%.64s'", tok->name, name);
			return;
		}
		if (!(tok->perms & perm)) {
			out->status = 403;
			snprintf(out->msg, sizeof(out->msg),
				 "token '%s' may not %s (permissions of the token)", tok->name,
				 perm_name(perm));
			return;
		}
	} else if (!name) {
		name = c->default_dataset;
	}
	out->ds = server_tenants_find(t, name);
	if (!out->ds) {
		out->status = server_dataset_name_ok(name) ? 404 : 400;
		snprintf(out->msg, sizeof(out->msg), "no dataset '%.64s'%s", name,
			 out->status == 400 ? " (names are 1..64 of a-z 0-9 _ -)" : "");
	}
}

bool server_may(const struct server_tenants *t, const char *authorization,
		const struct server_dataset *ds, unsigned perm)
{
	const struct server_token_conf *tok;
	bool wildcard;

	if (!t->conf->ntokens)
		return true;
	tok = find_token(t->conf, authorization);
	return tok && (tok->perms & perm) && token_lists(tok, ds->name, &wildcard);
}

struct server_dataset *server_tenants_find(const struct server_tenants *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ds[i].name, name))
			return &t->ds[i];
	return NULL;
}

int server_tenants_open(struct server_tenants *t, const struct server_conf *conf,
			const char *data_dir, const char *storage, struct prof_err *err)
{
	struct stat sb;
	char *path;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	t->conf = conf;
	if (mkdir(data_dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "cannot create data directory %s: %s",
				    data_dir, strerror(errno));
	/* A store of the layout before datasets (DATA/wal) is not silently ignored. */
	path = xasprintf("%s/wal", data_dir);
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
		rc = prof_err_set(err, -PROF_EFORMAT, -1,
				  "%s holds a store of the layout before datasets; move its "
				  "contents (LOCK, wal/) into %s/%s/ to keep it as the default "
				  "dataset",
				  data_dir, data_dir, SERVER_DATASET_DEFAULT);
		free(path);
		return rc;
	}
	free(path);
	t->ds = xcalloc(conf->ndatasets, sizeof(*t->ds));
	for (size_t i = 0; i < conf->ndatasets; i++) {
		struct server_dataset *d = &t->ds[i];

		d->conf = &conf->datasets[i];
		d->name = d->conf->name;
		pthread_mutex_init(&d->rules_lock, NULL);
		d->series = server_series_new();
		t->n++;
		struct store_options so;

		store_options_default(&so);
		so.retention_ns = d->conf->retention_ns; /* the dataset's, 0 = keep */
		so.replay_background = true; /* listen at once, whatever the WAL holds */
		if (d->conf->head_max_bytes)
			so.head_max_bytes = d->conf->head_max_bytes;
		if (d->conf->block_duration_ns)
			so.block_duration_ns = d->conf->block_duration_ns;
		if (storage) {
			/* of the options, ClickHouse uses the retention (head sizes
			 * are the embedded store's) */
			rc = store_open_clickhouse(storage, d->name, &so, &d->st, err);
		} else {
			path = xasprintf("%s/%s", data_dir, d->name);
			rc = store_open_opts(path, &so, &d->st, err);
			free(path);
		}
		if (rc)
			break;
		path = xasprintf("%s/%s.usage.json", data_dir, d->name);
		rc = server_usage_open(path, d->name, &d->usage, err);
		free(path);
		if (rc)
			break;
		log_info("dataset: opened name=%s retention=%llds head_max_bytes=%llu "
			 "block_duration=%llds rules=%zu",
			 d->name, (long long)(d->conf->retention_ns / 1000000000LL),
			 (unsigned long long)so.head_max_bytes,
			 (long long)(so.block_duration_ns / 1000000000LL), d->conf->nrules);
	}
	if (rc) {
		if (err && err->msg[0] && !strstr(err->msg, "dataset"))
			snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
				 " (dataset %s)", t->ds[t->n - 1].name);
		server_tenants_close(t);
	}
	return rc;
}

void server_tenants_close(struct server_tenants *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		server_usage_close(t->ds[i].usage);
		store_close(t->ds[i].st);
		pthread_mutex_destroy(&t->ds[i].rules_lock);
		server_series_free(t->ds[i].series);
	}
	free(t->ds);
	t->ds = NULL;
	t->n = 0;
}

void server_req_auth(struct server_req *rq, unsigned perm, struct server_auth *auth)
{
	const char *ds = server_header(rq, "X-Profd-Dataset");

	if (!ds || !*ds)
		ds = server_arg(rq, "dataset");
	if (!ds || !*ds)
		ds = server_header(rq, "X-Scope-OrgID");
	server_authorize(&rq->srv->tenants, server_header(rq, "Authorization"), ds, perm, auth);
	rq->token = auth->token;
	rq->dataset = auth->ds ? auth->ds->name : NULL;
}

struct store *server_req_store(struct server_req *rq, unsigned perm, struct server_reply *rp)
{
	struct server_auth auth;

	server_req_auth(rq, perm, &auth);
	if (auth.status) {
		server_reply_json_error(rp, auth.status, "%s", auth.msg);
		if (auth.status == 401)
			rp->www_authenticate = "Bearer realm=\"profd\"";
		return NULL;
	}
	/* After a restart the WAL may still be replaying: a query waits for it
	 * (its worker thread, not a socket thread), then answers what there is
	 * and says so (X-Profd-Replay). */
	if (perm == SERVER_PERM_QUERY && !store_wait_replayed(auth.ds->st, rq->srv->replay_wait_ns))
		rp->replaying = true;
	return auth.ds->st;
}
