// SPDX-License-Identifier: Apache-2.0
/*
 * k8s.c - Kubernetes service discovery: credentials (api_server,
 * kubeconfig, in-cluster), the list + watch threads and their lifecycle;
 * the object decoder is k8s_decode.c (k8s_int.h); see k8s.h.
 *
 * The objects of a watcher sit in a vector
 * searched linearly by key: an event costs O(objects), fine for the
 * thousands of pods a namespace holds, to be indexed if fleets need it.
 *
 * Locking: k->lock guards every watcher's object vector, k->changed and
 * the stop flag's condition variable; a watcher's other fields belong to
 * its thread.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/yaml.h"
#include "scrape/fetch.h"
#include "scrape/k8s.h"
#include "scrape/k8s_int.h"

#include <jansson.h>
#include <malloc.h>
#include <pthread.h>

#define SA_DIR	       "/var/run/secrets/kubernetes.io/serviceaccount"
#define NS_PER_S       ((int64_t)1000000000)
#define WATCH_SECONDS  300 /* timeoutSeconds asked of the server */
#define MAX_TOKEN      ((size_t)64 << 10)
#define MAX_BACKOFF_NS (30 * NS_PER_S)

/* --- the discoverer --------------------------------------------------------------------- */

struct watcher {
	struct scrape_k8s *k;
	enum scrape_k8s_role
		role; /* what it lists: the config's, or pods/services joined to endpoints */
	bool targets; /* its objects give targets (false: joined in only) */
	char *url; /* the collection, with its selector query ("...?" or "...?labelSelector=..&") */
	char *where;			    /* "namespace shop" / "all namespaces", for messages */
	VEC(struct scrape_k8s_object) objs; /* under k->lock */
	char rv[MAX_RV];
	bool need_list;
	void *curl;
	pthread_t th;
	bool started;
	/* stream state, while a watch is open */
	struct buf line;
	bool gone;
	uint64_t events;
};

struct scrape_k8s {
	const struct scrape_k8s_sd *c;
	char *job;
	char *server;	  /* no trailing slash */
	char *token_file; /* NULL = none */
	char *token;	  /* a kubeconfig's inline token; NULL = none */
	struct scrape_tls_conf tls;
	struct scrape_fetch_pem pem; /* a kubeconfig's *-data, decoded; owned */
	bool have_pem;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, changed; /* stop: atomic; changed: under lock */
	struct watcher *w;  /* per namespace: nroles watchers, the targets' one first */
	size_t nw, nroles;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleep @ns or until stopped. */
static void k8s_sleep(struct scrape_k8s *k, int64_t ns)
{
	int64_t end = mono_ns() + ns;

	pthread_mutex_lock(&k->lock);
	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE) && mono_ns() < end) {
		struct timespec ts = { (time_t)(end / NS_PER_S), (long)(end % NS_PER_S) };

		pthread_cond_timedwait(&k->cond, &k->lock, &ts);
	}
	pthread_mutex_unlock(&k->lock);
}

/* The bearer token for the next request, or NULL; caller frees (and wipes). */
static char *token_get(struct scrape_k8s *k)
{
	struct buf b;
	char *t;
	int rc;

	if (k->token)
		return xstrdup(k->token);
	if (!k->token_file)
		return NULL;
	buf_init(&b, MAX_TOKEN);
	rc = buf_read_file(&b, k->token_file);
	if (rc) {
		log_warn("scrape: job=%s: kubernetes: token file %s: %s", k->job, k->token_file,
			 prof_strerror(rc));
		buf_release(&b);
		return NULL;
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r' ||
			 b.p[b.len - 1] == ' ' || b.p[b.len - 1] == '\t'))
		b.len--;
	t = xstrndup(b.p ? b.p : "", b.len);
	memset(b.p, 0, b.len);
	buf_release(&b);
	return t;
}

static void token_put(char *t)
{
	if (t) {
		memset(t, 0, strlen(t));
		free(t);
	}
}

static void mark_changed(struct scrape_k8s *k)
{
	k->changed = true; /* under k->lock */
}

static int obj_find(struct watcher *w, const char *key)
{
	for (size_t i = 0; i < w->objs.n; i++)
		if (!strcmp(w->objs.v[i].key, key))
			return (int)i;
	return -1;
}

/* Apply one decoded event (the object is taken). Under no lock. */
static void apply_event(struct watcher *w, enum scrape_k8s_event_type type,
			struct scrape_k8s_object *o)
{
	struct scrape_k8s *k = w->k;
	int i;

	pthread_mutex_lock(&k->lock);
	i = obj_find(w, o->key);
	if (type == SCRAPE_K8S_DELETED) {
		if (i >= 0) {
			scrape_k8s_object_release(&w->objs.v[i]);
			w->objs.v[i] = w->objs.v[--w->objs.n];
			mark_changed(k);
		}
		scrape_k8s_object_release(o);
	} else if (i >= 0) {
		scrape_k8s_object_release(&w->objs.v[i]);
		w->objs.v[i] = *o;
		mark_changed(k);
	} else if (w->objs.n >= SCRAPE_K8S_MAX_OBJECTS) {
		log_warn("scrape: job=%s: kubernetes %s: more than %d objects; ignoring %s", k->job,
			 w->where, SCRAPE_K8S_MAX_OBJECTS, o->key);
		scrape_k8s_object_release(o);
	} else {
		VEC_PUSH(&w->objs, *o);
		mark_changed(k);
	}
	pthread_mutex_unlock(&k->lock);
	memset(o, 0, sizeof(*o));
}

static int do_list(struct watcher *w)
{
	struct scrape_k8s *k = w->k;
	enum scrape_k8s_role role = w->role;
	struct scrape_fetch_opts fo = { .timeout_ms = 60000,
					.max_body = SCRAPE_K8S_MAX_LIST,
					.stop = &k->stop,
					.tls = &k->tls,
					.pem = k->have_pem ? &k->pem : NULL };
	VEC(struct scrape_k8s_object) objs = { 0 };
	struct prof_err err;
	struct buf body;
	json_t *root = NULL, *items = NULL, *meta, *it;
	const char *rv = NULL;
	char *url, *tok;
	size_t i, bad = 0;
	int rc;

	prof_err_init(&err);
	buf_init(&body, SCRAPE_K8S_MAX_LIST);
	url = xasprintf("%s", w->url);
	url[strlen(url) - 1] = '\0'; /* the trailing '?' or '&' */
	tok = token_get(k);
	fo.bearer = tok;
	rc = scrape_fetch(w->curl, url, &fo, &body, NULL, &err);
	token_put(tok);
	if (!rc) {
		root = k8s_load_json(body.p, body.len, SCRAPE_K8S_MAX_LIST, &err);
		rc = root ? 0 : err.code ? err.code : -EINVAL;
	}
	buf_release(&body);
	if (!rc) {
		struct dec d = { &err, "", NULL };

		if (!json_is_object(root))
			rc = k8s_ferr(&d, "(list)", "expected an object");
		else if (!(rc = k8s_get_obj(&d, root, "metadata", "metadata", &meta)) &&
			 !(rc = k8s_get_str(&d, meta, "resourceVersion", "metadata.resourceVersion",
					    true, &rv)) &&
			 !(rc = k8s_get_arr(&d, root, "items", "items", SCRAPE_K8S_MAX_OBJECTS,
					    &items)) &&
			 strlen(rv) >= MAX_RV)
			rc = k8s_ferr(&d, "metadata.resourceVersion", "too long");
	}
	if (rc) {
		log_warn("scrape: job=%s: kubernetes %s: list %s: %s", k->job, w->where, url,
			 err.msg);
		json_decref(root);
		free(url);
		return rc;
	}
	if (items)
		json_array_foreach(items, i, it)
		{
			struct scrape_k8s_object o;
			struct prof_err oerr;

			prof_err_init(&oerr);
			if (k8s_decode_json(role, it, "", &o, &oerr)) {
				if (!bad++)
					log_warn(
						"scrape: job=%s: kubernetes %s: skipping items[%zu]: %s",
						k->job, w->where, i, oerr.msg);
				continue;
			}
			VEC_PUSH(&objs, o);
		}
	snprintf(w->rv, sizeof(w->rv), "%s", rv);
	json_decref(root);
	/* A big list's JSON tree is gone: give its pages back (lists are rare). */
	malloc_trim(0);
	pthread_mutex_lock(&k->lock);
	for (i = 0; i < w->objs.n; i++)
		scrape_k8s_object_release(&w->objs.v[i]);
	VEC_FREE(&w->objs);
	w->objs.v = objs.v;
	w->objs.n = objs.n;
	w->objs.cap = objs.cap;
	mark_changed(k);
	pthread_mutex_unlock(&k->lock);
	log_info("scrape: job=%s: kubernetes %s: listed %zu objects (%zu skipped) at "
		 "resourceVersion %s",
		 k->job, w->where, objs.n, bad, w->rv);
	free(url);
	return 0;
}

/* One complete line of the watch stream. Non-zero aborts the watch. */
static int watch_line(struct watcher *w, const char *p, size_t n)
{
	struct scrape_k8s *k = w->k;
	enum scrape_k8s_event_type type;
	struct scrape_k8s_object o;
	struct prof_err err;
	long code;
	int rc;

	while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (!n)
		return 0;
	prof_err_init(&err);
	rc = scrape_k8s_event_decode(w->role, p, n, &type, &code, &o, &err);
	if (rc) {
		log_warn("scrape: job=%s: kubernetes %s: skipping a watch event: %s", k->job,
			 w->where, err.msg);
		return 0;
	}
	if (type == SCRAPE_K8S_ERROR) {
		scrape_k8s_object_release(&o);
		if (code == 410) {
			w->gone = true;
			return -ESTALE;
		}
		log_warn("scrape: job=%s: kubernetes %s: %s", k->job, w->where, err.msg);
		return -EPROTO;
	}
	w->events++; /* not ERROR ones: a watch that only fails has delivered nothing */
	if (o.rv && *o.rv)
		snprintf(w->rv, sizeof(w->rv), "%s", o.rv);
	if (type == SCRAPE_K8S_BOOKMARK) {
		scrape_k8s_object_release(&o);
		return 0;
	}
	apply_event(w, type, &o);
	return 0;
}

static int watch_data(void *arg, const char *p, size_t n)
{
	struct watcher *w = arg;
	const char *nl;
	int rc;

	while ((nl = memchr(p, '\n', n))) {
		size_t part = (size_t)(nl - p);

		if (w->line.len) {
			if (buf_add(&w->line, p, part))
				return -PROF_ETOOBIG;
			rc = watch_line(w, w->line.p, w->line.len);
			buf_reset(&w->line);
		} else {
			rc = watch_line(w, p, part);
		}
		if (rc)
			return rc;
		n -= part + 1;
		p = nl + 1;
	}
	if (n && buf_add(&w->line, p, n)) {
		log_warn("scrape: job=%s: kubernetes %s: a watch event is larger than %zu bytes",
			 w->k->job, w->where, SCRAPE_K8S_MAX_EVENT);
		return -PROF_ETOOBIG;
	}
	return 0;
}

/* Watch from w->rv until the stream ends. 0 = ended normally; else why. */
static int do_watch(struct watcher *w, long *status)
{
	struct scrape_k8s *k = w->k;
	struct scrape_fetch_opts fo = { .timeout_ms = (WATCH_SECONDS + 30) * 1000L,
					.max_body = 64 << 10,
					.stop = &k->stop,
					.tls = &k->tls,
					.pem = k->have_pem ? &k->pem : NULL,
					.on_data = watch_data,
					.on_data_arg = w };
	struct prof_err err;
	struct buf body, rvq;
	char *url, *tok;
	int rc;

	buf_init(&body, 64 << 10);
	buf_init(&rvq, 4 * MAX_RV);
	(void)buf_add_url_escaped(&rvq, w->rv);
	url = xasprintf("%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%.*s",
			w->url, WATCH_SECONDS, (int)rvq.len, rvq.p ? rvq.p : "");
	buf_release(&rvq);
	buf_reset(&w->line);
	w->gone = false;
	prof_err_init(&err);
	tok = token_get(k);
	fo.bearer = tok;
	rc = scrape_fetch(w->curl, url, &fo, &body, status, &err);
	token_put(tok);
	if (rc && rc != -ECANCELED && !w->gone && *status != 410)
		log_warn("scrape: job=%s: kubernetes %s: watch from resourceVersion %s: %s", k->job,
			 w->where, w->rv, err.msg);
	buf_release(&body);
	free(url);
	return rc;
}

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct scrape_k8s *k = w->k;
	int64_t backoff = NS_PER_S;

	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
		uint64_t events0 = w->events;
		char rv0[MAX_RV];
		bool moved;
		int64_t t0;
		long status = 0;
		int rc;

		if (w->need_list) {
			if (do_list(w)) {
				k8s_sleep(k, backoff);
				backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
				continue;
			}
			w->need_list = false;
		}
		memcpy(rv0, w->rv, sizeof(rv0));
		t0 = mono_ns();
		rc = do_watch(w, &status);
		if (rc == -ECANCELED)
			break;
		/*
		 * Progress is a resourceVersion moved on: a watch that brings only
		 * bookmarks of the same one and ends at once is retried with back-off.
		 */
		moved = w->events != events0 && strcmp(rv0, w->rv);
		if (moved || mono_ns() - t0 > 10 * NS_PER_S)
			backoff = NS_PER_S; /* it worked for a while: a new failure starts over */
		if (w->gone || status == 410) {
			log_info("scrape: job=%s: kubernetes %s: resourceVersion %s is gone (410): "
				 "listing again",
				 k->job, w->where, w->rv);
			w->need_list = true;
			if (w->events == events0 && mono_ns() - t0 < NS_PER_S) {
				k8s_sleep(k,
					  backoff); /* 410 at once, again and again: do not spin */
				backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
			}
			continue;
		}
		if (!rc && (moved || mono_ns() - t0 >= NS_PER_S))
			continue; /* the server ended the watch: resume at once */
		/* Failed, or ended at once with nothing (a proxy?): do not spin. */
		if (rc == -EPROTO && status == 200)
			w->need_list = true; /* an ERROR event other than 410: start over */
		k8s_sleep(k, backoff);
		backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
	}
	return NULL;
}

/* --- credentials ------------------------------------------------------------------------ */

static char *read_small(const char *path, struct prof_err *err)
{
	struct buf b;
	char *s;
	int rc;

	buf_init(&b, 4096);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		prof_err_set(err, rc, -1, "%s: %s", path, prof_strerror(rc));
		return NULL;
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == ' '))
		b.len--;
	s = xstrndup(b.p ? b.p : "", b.len);
	buf_release(&b);
	return s;
}

/* The value node of @key in mapping @map, or NULL. */
static yaml_node_t *ymap_get(struct ywalk *y, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	YWALK_MAP_FOREACH(map, pair)
	{
		const char *s = ywalk_scalar(ywalk_node(y, pair->key));

		if (s && !strcmp(s, key))
			return ywalk_node(y, pair->value);
	}
	return NULL;
}

/* The @inner mapping of the entry named @name in the list @list (kubeconfig's shape). */
static yaml_node_t *ynamed(struct ywalk *y, yaml_node_t *list, const char *name, const char *inner)
{
	if (!list || list->type != YAML_SEQUENCE_NODE)
		return NULL;
	YWALK_SEQ_FOREACH(list, it)
	{
		yaml_node_t *e = ywalk_node(y, *it);
		const char *n = ywalk_scalar(ymap_get(y, e, "name"));

		if (n && !strcmp(n, name))
			return ymap_get(y, e, inner);
	}
	return NULL;
}

/* A kubeconfig path field: relative to the kubeconfig's directory. */
static char *kc_path(const char *kc, const char *p)
{
	const char *slash = strrchr(kc, '/');

	if (!p)
		return NULL;
	if (p[0] == '/' || !slash)
		return xstrdup(p);
	return xasprintf("%.*s/%s", (int)(slash - kc), kc, p);
}

/* A kubeconfig *-data field (base64 PEM) of @map into *@out / *@len; absent: untouched. */
static int kc_data(struct scrape_k8s *k, const char *path, struct ywalk *y, yaml_node_t *map,
		   const char *key, const char **out, size_t *len, struct prof_err *err)
{
	const char *s = ywalk_scalar(ymap_get(y, map, key));
	uint8_t *pem;

	if (!s)
		return 0;
	pem = parse_base64(s, strlen(s), len);
	if (!pem || !*len) {
		free(pem);
		return prof_err_set(err, -EINVAL, -1, "kubeconfig_file %s: %s: not base64", path,
				    key);
	}
	*out = (const char *)pem;
	k->have_pem = true;
	return 0;
}

static int load_kubeconfig(struct scrape_k8s *k, char **ns, struct prof_err *err)
{
	static const char *const unsupported[] = { "exec", "auth-provider" };
	const char *path = k->c->kubeconfig_file, *cur, *cname, *uname, *s;
	yaml_node_t *root, *ctx, *cl, *user;
	struct ywalk y = { 0 };
	struct buf b;
	int rc;

	buf_init(&b, 1 << 20);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "kubeconfig_file %s: %s", path, prof_strerror(rc));
	}
	rc = ywalk_load(&y, b.p, b.len, path, err, &root);
	memset(b.p, 0, b.len);
	buf_release(&b);
	if (rc)
		goto out;
	cur = ywalk_scalar(ymap_get(&y, root, "current-context"));
	ctx = cur ? ynamed(&y, ymap_get(&y, root, "contexts"), cur, "context") : NULL;
	cname = ywalk_scalar(ymap_get(&y, ctx, "cluster"));
	uname = ywalk_scalar(ymap_get(&y, ctx, "user"));
	cl = cname ? ynamed(&y, ymap_get(&y, root, "clusters"), cname, "cluster") : NULL;
	user = uname ? ynamed(&y, ymap_get(&y, root, "users"), uname, "user") : NULL;
	s = ywalk_scalar(ymap_get(&y, cl, "server"));
	if (!s || (strncmp(s, "https://", 8) && strncmp(s, "http://", 7))) {
		rc = prof_err_set(err, -EINVAL, -1,
				  "kubeconfig_file %s: current-context '%s' names no cluster with "
				  "an http(s) server",
				  path, cur ? cur : "");
		goto out;
	}
	k->server = xstrdup(s);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(unsupported); i++)
		if (ymap_get(&y, cl, unsupported[i]) || ymap_get(&y, user, unsupported[i])) {
			rc = prof_err_set(
				err, -EINVAL, -1,
				"kubeconfig_file %s: '%s' is not supported (give a token, "
				"a tokenFile or a client certificate)",
				path, unsupported[i]);
			goto out;
		}
	if ((rc = kc_data(k, path, &y, cl, "certificate-authority-data", &k->pem.ca, &k->pem.ca_len,
			  err)) ||
	    (rc = kc_data(k, path, &y, user, "client-certificate-data", &k->pem.cert,
			  &k->pem.cert_len, err)) ||
	    (rc = kc_data(k, path, &y, user, "client-key-data", &k->pem.key, &k->pem.key_len, err)))
		goto out;
	k->tls.ca_file = kc_path(path, ywalk_scalar(ymap_get(&y, cl, "certificate-authority")));
	s = ywalk_scalar(ymap_get(&y, cl, "insecure-skip-tls-verify"));
	k->tls.insecure_skip_verify = s && !strcmp(s, "true");
	k->tls.cert_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "client-certificate")));
	k->tls.key_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "client-key")));
	s = ywalk_scalar(ymap_get(&y, user, "token"));
	if (s)
		k->token = xstrdup(s);
	k->token_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "tokenFile")));
	s = ywalk_scalar(ymap_get(&y, ctx, "namespace"));
	*ns = xstrdup(s ? s : "default");
out:
	ywalk_release(&y);
	return rc;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Server, token and TLS from the config, the kubeconfig or the pod's service account. */
static int credentials(struct scrape_k8s *k, char **own_ns, struct prof_err *err)
{
	const struct scrape_k8s_sd *c = k->c;
	const char *host, *port;
	int rc;

	*own_ns = NULL;
	if (c->kubeconfig_file) {
		if ((rc = load_kubeconfig(k, own_ns, err)))
			return rc;
	} else if (c->api_server) {
		k->server = xstrdup(c->api_server);
		k->token_file = dup_or_null(c->bearer_token_file);
		k->tls.ca_file = dup_or_null(c->tls.ca_file);
	} else {
		host = getenv("KUBERNETES_SERVICE_HOST");
		port = getenv("KUBERNETES_SERVICE_PORT");
		if (!host || !*host || !port || !*port)
			return prof_err_set(err, -EINVAL, -1,
					    "kubernetes_sd_configs: no api_server or "
					    "kubeconfig_file, and not in a cluster "
					    "(KUBERNETES_SERVICE_HOST/PORT unset)");
		k->server = strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port)
					      : xasprintf("https://%s:%s", host, port);
		k->token_file =
			xstrdup(c->bearer_token_file ? c->bearer_token_file : SA_DIR "/token");
		k->tls.ca_file = xstrdup(c->tls.ca_file ? c->tls.ca_file : SA_DIR "/ca.crt");
	}
	if (!c->kubeconfig_file) {
		k->tls.cert_file = dup_or_null(c->tls.cert_file);
		k->tls.key_file = dup_or_null(c->tls.key_file);
		k->tls.insecure_skip_verify = c->tls.insecure_skip_verify;
	} else if (c->bearer_token_file) {
		free(k->token_file);
		k->token_file = xstrdup(c->bearer_token_file);
	}
	while (strlen(k->server) > 8 && k->server[strlen(k->server) - 1] == '/')
		k->server[strlen(k->server) - 1] = '\0';
	if (c->own_namespace && !*own_ns) {
		*own_ns = read_small(SA_DIR "/namespace", err);
		if (!*own_ns)
			return err ? err->code : -ENOENT;
	}
	return 0;
}

/* --- lifecycle -------------------------------------------------------------------------- */

static const char *const collections[] = { "pods", "endpoints", "services", "nodes" };

static void watcher_init(struct scrape_k8s *k, struct watcher *w, const char *ns,
			 enum scrape_k8s_role role)
{
	const struct scrape_k8s_sd *c = k->c;
	struct buf u;

	buf_init(&u, 1 << 16);
	memset(w, 0, sizeof(*w));
	w->k = k;
	w->role = role;
	w->targets = role == c->role;
	if (ns)
		(void)buf_addf(&u, "%s/api/v1/namespaces/%s/%s?", k->server, ns, collections[role]);
	else
		(void)buf_addf(&u, "%s/api/v1/%s?", k->server, collections[role]);
	for (size_t i = 0; i < c->nselectors; i++) {
		const struct scrape_k8s_selector *s = &c->selectors[i];

		if (s->role != role)
			continue;
		if (s->label) {
			(void)buf_addstr(&u, "labelSelector=");
			(void)buf_add_url_escaped(&u, s->label);
			(void)buf_addstr(&u, "&");
		}
		if (s->field) {
			(void)buf_addstr(&u, "fieldSelector=");
			(void)buf_add_url_escaped(&u, s->field);
			(void)buf_addstr(&u, "&");
		}
	}
	w->url = xstrndup(u.p, u.len);
	buf_release(&u);
	w->where = ns ? xasprintf("%s in namespace %s", collections[role], ns)
		      : xasprintf("%s in all namespaces", collections[role]);
	w->need_list = true;
	buf_init(&w->line, SCRAPE_K8S_MAX_EVENT);
	w->curl = scrape_fetch_handle_new();
}

int scrape_k8s_new(const struct scrape_k8s_sd *c, const char *job, bool once,
		   struct scrape_k8s **out, struct prof_err *err)
{
	struct scrape_k8s *k;
	pthread_condattr_t ca;
	char *own = NULL;
	const char *nss[65];
	size_t nns = 0;
	int rc;

	*out = NULL;
	if ((rc = scrape_fetch_init(err)))
		return rc;
	k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->job = xstrdup(job);
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = credentials(k, &own, err))) {
		free(own);
		scrape_k8s_free(k);
		return rc;
	}
	if (c->role != SCRAPE_K8S_NODE) {
		for (size_t i = 0; i < c->nnamespaces && nns < 64; i++)
			nss[nns++] = c->namespaces[i];
		if (own && c->own_namespace) {
			bool dup = false;

			for (size_t i = 0; i < nns && !dup; i++)
				dup = !strcmp(nss[i], own);
			if (!dup)
				nss[nns++] = own;
		}
	}
	/* endpoints: also pods and services, whose labels join its targets (Prometheus). */
	k->nroles = c->role == SCRAPE_K8S_ENDPOINTS ? 3 : 1;
	k->nw = (nns ? nns : 1) * k->nroles;
	k->w = xcalloc(k->nw, sizeof(*k->w));
	for (size_t i = 0; i < k->nw; i++) {
		static const enum scrape_k8s_role joined[] = { SCRAPE_K8S_ENDPOINTS, SCRAPE_K8S_POD,
							       SCRAPE_K8S_SERVICE };

		watcher_init(k, &k->w[i], nns ? nss[i / k->nroles] : NULL,
			     k->nroles > 1 ? joined[i % k->nroles] : c->role);
	}
	free(own);
	for (size_t i = 0; i < k->nw; i++) {
		if (once) {
			(void)do_list(&k->w[i]);
			continue;
		}
		rc = pthread_create(&k->w[i].th, NULL, watcher_main, &k->w[i]);
		if (rc) {
			scrape_k8s_free(k);
			return prof_err_set(err, -rc, -1, "kubernetes: cannot start a thread: %s",
					    strerror(rc));
		}
		k->w[i].started = true;
	}
	*out = k;
	return 0;
}

bool scrape_k8s_take_changed(struct scrape_k8s *k)
{
	bool c;

	pthread_mutex_lock(&k->lock);
	c = k->changed;
	k->changed = false;
	pthread_mutex_unlock(&k->lock);
	return c;
}

/* Copy onto @dst the labels of @src starting with @prefix but not with @except (may be NULL). */
static void copy_prefixed(struct scrape_labels *dst, const struct scrape_labels *src,
			  const char *prefix, const char *except)
{
	for (size_t i = 0; i < src->l.n; i++) {
		const struct scrape_label *l = &src->l.v[i];

		if (!strncmp(l->name, prefix, strlen(prefix)) &&
		    (!except || strncmp(l->name, except, strlen(except))))
			scrape_labels_set(dst, l->name, l->value);
	}
}

static const struct scrape_k8s_object *find_obj(const struct watcher *w, const char *ns,
						const char *name)
{
	char key[520];

	if (!ns || !name)
		return NULL;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	for (size_t i = 0; i < w->objs.n; i++)
		if (!strcmp(w->objs.v[i].key, key))
			return &w->objs.v[i];
	return NULL;
}

/* The service_* labels (but the port ones) of the service named like the endpoints of @g. */
static void service_labels(const struct watcher *svcs, const struct scrape_group *g,
			   struct scrape_labels *out)
{
	const struct scrape_k8s_object *svc;

	svc = find_obj(svcs, scrape_labels_get(&g->labels, "__meta_kubernetes_namespace"),
		       scrape_labels_get(&g->labels, "__meta_kubernetes_endpoints_name"));
	if (svc && svc->ngroups)
		copy_prefixed(out, &svc->groups[0].labels, "__meta_kubernetes_service_",
			      "__meta_kubernetes_service_port_");
}

/*
 * An endpoints target with its service's labels and its pod's, as
 * Prometheus joins them: the service named like the endpoints (its
 * __meta_kubernetes_service_* labels but the port ones), and the pod the
 * address points at (its __meta_kubernetes_pod_* labels; the container
 * and port ones of the container port at the same address, if declared).
 */
static void join_endpoint(const struct watcher *pods, const struct watcher *svcs,
			  const struct scrape_group *g, struct scrape_labels *out)
{
	const char *ns = scrape_labels_get(&g->labels, "__meta_kubernetes_namespace");
	const struct scrape_k8s_object *pod = NULL;
	const char *kind;

	scrape_labels_copy(out, &g->labels);
	service_labels(svcs, g, out);
	kind = scrape_labels_get(&g->labels, "__meta_kubernetes_endpoint_address_target_kind");
	if (kind && !strcmp(kind, "Pod"))
		pod = find_obj(pods, ns,
			       scrape_labels_get(&g->labels,
						 "__meta_kubernetes_endpoint_address_target_name"));
	if (!pod || !pod->ngroups)
		return;
	for (size_t i = 0; i < pod->ngroups; i++)
		if (!strcmp(pod->groups[i].targets[0], g->targets[0])) {
			copy_prefixed(out, &pod->groups[i].labels, "__meta_kubernetes_pod_", NULL);
			return;
		}
	copy_prefixed(out, &pod->groups[0].labels, "__meta_kubernetes_pod_",
		      "__meta_kubernetes_pod_container_");
}

/*
 * Like Prometheus, a target for each declared container port of a pod
 * behind @eo that no endpoint address names: the endpoints', service's
 * and pod's labels, no endpoint_* ones.
 */
static void endpoint_pod_extras(const struct watcher *pods, const struct watcher *svcs,
				const struct scrape_k8s_object *eo,
				void (*fn)(void *arg, const struct scrape_group *g), void *arg)
{
	const char *seen[SCRAPE_K8S_MAX_TARGETS_PER_OBJECT];
	size_t nseen = 0;

	for (size_t i = 0; i < eo->ngroups; i++) {
		const struct scrape_group *g = &eo->groups[i];
		const char *ns = scrape_labels_get(&g->labels, "__meta_kubernetes_namespace");
		const char *kind, *name;
		const struct scrape_k8s_object *pod;
		bool dup = false;

		kind = scrape_labels_get(&g->labels,
					 "__meta_kubernetes_endpoint_address_target_kind");
		name = scrape_labels_get(&g->labels,
					 "__meta_kubernetes_endpoint_address_target_name");
		if (!kind || strcmp(kind, "Pod") || !name)
			continue;
		for (size_t k = 0; k < nseen && !dup; k++)
			dup = !strcmp(seen[k], name);
		if (dup || !(pod = find_obj(pods, ns, name)))
			continue;
		seen[nseen++] = name; /* at most one per group: within bounds */
		for (size_t p = 0; p < pod->ngroups; p++) {
			const struct scrape_group *pg = &pod->groups[p];
			struct scrape_group x = { pg->targets, 1, { { 0 } } };
			bool covered = false;

			if (!scrape_labels_get(&pg->labels,
					       "__meta_kubernetes_pod_container_port_number"))
				continue;
			for (size_t e = 0; e < eo->ngroups && !covered; e++)
				covered = !strcmp(eo->groups[e].targets[0], pg->targets[0]);
			if (covered)
				continue;
			copy_prefixed(&x.labels, &g->labels, "__meta_kubernetes_endpoints_", NULL);
			scrape_labels_set(&x.labels, "__meta_kubernetes_namespace", ns);
			service_labels(svcs, g, &x.labels);
			copy_prefixed(&x.labels, &pg->labels, "__meta_kubernetes_pod_", NULL);
			fn(arg, &x);
			scrape_labels_release(&x.labels);
		}
	}
}

void scrape_k8s_foreach_group(struct scrape_k8s *k,
			      void (*fn)(void *arg, const struct scrape_group *g), void *arg)
{
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < k->nw; i++) {
		const struct watcher *w = &k->w[i];

		if (!w->targets)
			continue;
		for (size_t j = 0; j < w->objs.n; j++) {
			if (w->role == SCRAPE_K8S_ENDPOINTS && k->nroles == 3)
				endpoint_pod_extras(&k->w[i + 1], &k->w[i + 2], &w->objs.v[j], fn,
						    arg);
			for (size_t g = 0; g < w->objs.v[j].ngroups; g++) {
				const struct scrape_group *grp = &w->objs.v[j].groups[g];
				struct scrape_group joined;

				if (w->role != SCRAPE_K8S_ENDPOINTS || k->nroles != 3) {
					fn(arg, grp);
					continue;
				}
				joined = *grp;
				memset(&joined.labels, 0, sizeof(joined.labels));
				join_endpoint(&k->w[i + 1], &k->w[i + 2], grp, &joined.labels);
				fn(arg, &joined);
				scrape_labels_release(&joined.labels);
			}
		}
	}
	pthread_mutex_unlock(&k->lock);
}

void scrape_k8s_free(struct scrape_k8s *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	__atomic_store_n(&k->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	for (size_t i = 0; i < k->nw; i++) {
		struct watcher *w = &k->w[i];

		if (w->started)
			pthread_join(w->th, NULL);
		for (size_t j = 0; j < w->objs.n; j++)
			scrape_k8s_object_release(&w->objs.v[j]);
		VEC_FREE(&w->objs);
		buf_release(&w->line);
		scrape_fetch_handle_free(w->curl);
		free(w->url);
		free(w->where);
	}
	free(k->w);
	free(k->job);
	free(k->server);
	free(k->token_file);
	token_put(k->token);
	free(k->tls.ca_file);
	free(k->tls.cert_file);
	free(k->tls.key_file);
	if (k->pem.key)
		memset((char *)k->pem.key, 0, k->pem.key_len);
	free((char *)k->pem.ca);
	free((char *)k->pem.cert);
	free((char *)k->pem.key);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
}
