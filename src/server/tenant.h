/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tenant.h - datasets and tokens at run time: one store per dataset in
 * DATA/<dataset>/ (store_open per directory), its signal-control rules
 * and usage counters, and the bearer-token check that picks the dataset
 * a request works on (docs/ingest.md, "Datasets and tokens";
 * docs/design.md, "Datasets are separate stores").
 *
 * Authorization of a request (server_authorize):
 *   1. the credential: "Authorization: Bearer <secret>", or "Basic
 *      base64(user:password)" whose password (else user) is the secret,
 *      as the Pyroscope SDKs send it. With tokens configured a missing or
 *      unknown credential is 401. The presented secret is compared with
 *      every configured one in constant time (no early exit, no
 *      data-dependent branch per byte), and secrets are never logged:
 *      logs and metrics name the token by its configured name;
 *   2. the dataset: the X-Profd-Dataset header, else the `dataset` query
 *      parameter, else X-Scope-OrgID (Pyroscope's tenant header), else the
 *      token's default_dataset, else the token's only dataset, else the
 *      configured default dataset;
 *   3. the permission: a token without the permission or the dataset gets
 *      403. An unknown dataset is 403 for a token that lists named
 *      datasets (its existence is not revealed) and 404 otherwise.
 *
 * Without tokens every request may ingest and query every dataset (the
 * server then listens on loopback only unless a config file says so).
 *
 * Thread-safety: after server_tenants_open everything here is read-only
 * except the stores, the usage counters and the rules' regex match data,
 * each with its own lock.
 */
#ifndef PROF_SERVER_TENANT_H
#define PROF_SERVER_TENANT_H

#include "base/compat.h"
#include "base/err.h"
#include "server/config.h"
#include "server/series.h"
#include "server/usage.h"
#include "store/store.h"

#include <pthread.h>

/** struct server_dataset - one open dataset. */
struct server_dataset {
	const struct server_dataset_conf *conf; /* lent from the server_conf */
	const char *name;			/* conf->name */
	struct store *st;			/* owned */
	struct server_usage *usage;		/* owned */
	pthread_mutex_t rules_lock;		/* PCRE2 match data of conf->rules */
	struct server_series_set *series;	/* owned: active series (series.h) */
};

struct server_tenants {
	const struct server_conf *conf; /* lent; outlives the tenants */
	struct server_dataset *ds;	/* @n entries, in config order */
	size_t n;
};

/** struct server_auth - the outcome of server_authorize. */
struct server_auth {
	unsigned status;	   /* 0 = allowed; else 400, 401, 403 or 404 */
	char msg[256];		   /* why, when status != 0; never contains a secret */
	struct server_dataset *ds; /* when allowed: lent from the tenants */
	const char *token;	   /* the token's name, "-" without tokens; static or lent */
};

/**
 * server_tenants_open() - open DATA_DIR (created as needed) and one store
 * per configured dataset in DATA_DIR/<name>/ (store_open_opts with the
 * dataset's retention, other options the store's defaults), with its usage counters
 * (DATA_DIR/<name>.usage.json). @conf is lent and must outlive @t.
 * With @storage (a clickhouse:// URL, store/clickhouse.h) the stores are
 * the datasets of that ClickHouse database instead of DATA_DIR/<name>/.
 * Errors: those of store_open or store_open_clickhouse (-EBUSY when another process holds a
 * dataset), -errno for the directory; @err names the dataset. On error
 * nothing stays open.
 */
int server_tenants_open(struct server_tenants *t, const struct server_conf *conf,
			const char *data_dir, const char *storage, struct prof_err *err);

/** server_tenants_close() - flush usage, close every store; NULL ok. */
void server_tenants_close(struct server_tenants *t);

/** server_tenants_find() - the dataset named @name, or NULL. Lent. */
struct server_dataset *server_tenants_find(const struct server_tenants *t, const char *name);

/**
 * server_authorize() - check @authorization (the header value, may be
 * NULL) for permission @perm (enum server_perm) on the dataset named
 * @dataset (NULL = the default as described above) and fill @out.
 * Never fails otherwise; @out->status says the verdict.
 */
void server_authorize(const struct server_tenants *t, const char *authorization,
		      const char *dataset, unsigned perm, struct server_auth *out);

/**
 * server_authorize_global() - check @authorization for a permission that
 * is not about one dataset (SERVER_PERM_METRICS): without tokens always
 * allowed; else 401 for a missing or unknown token, 403 for a token
 * without @perm. @out->ds stays NULL.
 */
void server_authorize_global(const struct server_tenants *t, const char *authorization,
			     unsigned perm, struct server_auth *out);

/**
 * server_may() - may the token named by a successful @auth also use
 * permission @perm on dataset @ds? (For listings over several datasets,
 * such as the usage API.) True without tokens.
 */
bool server_may(const struct server_tenants *t, const char *authorization,
		const struct server_dataset *ds, unsigned perm);

/**
 * server_secret_eq() - constant-time comparison of @a (@na bytes) with
 * the secret @b (@nb bytes): the time depends on @nb only. Exposed for
 * the unit test.
 */
bool server_secret_eq(const char *a, size_t na, const char *b, size_t nb);

#endif
