// SPDX-License-Identifier: Apache-2.0
/*
 * k8s.c - Kubernetes pod metadata from the kubelet's pod list; see k8s.h.
 *
 * A snapshot is an array of pods sorted by UID; each pod owns one string
 * arena ("key\0value\0" pairs for the attributes to add, the container
 * table as "id\0name\0"). Lookups take the read lock and copy the strings
 * into the profile, so the refresher may swap snapshots at any time.
 */
#include "base/compat.h"
#include "base/curl_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "agent/k8s.h"

#include <jansson.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define K8S_DEFAULT_URL	       "https://127.0.0.1:10250/pods"
#define K8S_SA_DIR	       "/var/run/secrets/kubernetes.io/serviceaccount"
#define K8S_EARLY_REFRESH_NS   (5 * 1000000000LL)
#define K8S_MAX_TOKEN	       16384
#define K8S_DEFAULT_MAX_BYTES  (64u << 20)
#define K8S_DEFAULT_REFRESH_MS 30000L

/* NUL-separated strings (the VEC fields, named so functions can take it). */
struct k8s_strs {
	char *v;
	size_t n, cap;
};

struct k8s_pod {
	char *uid;
	struct k8s_strs attrs;	    /* key\0value\0 ... */
	struct k8s_strs containers; /* id\0name\0 ... */
};

struct agent_k8s_snapshot {
	VEC(struct k8s_pod) pods;
};

struct agent_k8s {
	struct agent_k8s_opts o;
	char *url, *token_file, *ca_file;
	pthread_rwlock_t lock; /* snap */
	struct agent_k8s_snapshot *snap;
	pthread_mutex_t mu; /* stats, stop, wake */
	pthread_cond_t cond;
	bool stop, wake;
	int64_t last_fetch_ns;
	struct agent_k8s_stats stats;
	pthread_t thread;
	bool thread_started;
};

static void kv_add(struct k8s_strs *v, const char *k, size_t kn, const char *val, size_t vn)
{
	VEC_RESERVE(v, kn + vn + 2);
	memcpy(v->v + v->n, k, kn);
	v->v[v->n + kn] = '\0';
	memcpy(v->v + v->n + kn + 1, val, vn);
	v->v[v->n + kn + 1 + vn] = '\0';
	v->n += kn + vn + 2;
}

static void kv_add_cstr(struct k8s_strs *v, const char *k, const char *val)
{
	kv_add(v, k, strlen(k), val, strlen(val));
}

/* metadata.labels / annotations into attrs as PREFIX<key>. */
static int k8s_parse_map(json_t *m, const char *prefix, const char *field, struct k8s_pod *pod,
			 size_t *nkv, uint64_t *skipped, struct prof_err *err)
{
	const char *key;
	json_t *val;
	char name[512];

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return prof_err_set(err, -PROF_EFORMAT, -1, "pod %s: %s is not an object", pod->uid,
				    field);
	json_object_foreach(m, key, val)
	{
		size_t n = strlen(key);

		if (!json_is_string(val) || json_string_length(val) > AGENT_K8S_MAX_VALUE ||
		    *nkv >= AGENT_K8S_MAX_KV || strlen(prefix) + n + 1 > sizeof(name) ||
		    memchr(json_string_value(val), '\0', json_string_length(val))) {
			(*skipped)++;
			continue;
		}
		snprintf(name, sizeof(name), "%s%s", prefix, key);
		kv_add(&pod->attrs, name, strlen(name), json_string_value(val),
		       json_string_length(val));
		(*nkv)++;
	}
	return 0;
}

/* "containerd://<id>" (or docker://, cri-o://) -> the id after "://". */
static const char *k8s_container_id(const char *s)
{
	const char *p = strstr(s, "://");

	return p ? p + 3 : s;
}

static int k8s_parse_statuses(json_t *a, const char *field, struct k8s_pod *pod,
			      struct prof_err *err)
{
	size_t i;
	json_t *c;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return prof_err_set(err, -PROF_EFORMAT, -1, "pod %s: status.%s is not an array",
				    pod->uid, field);
	json_array_foreach(a, i, c)
	{
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *id = json_string_value(json_object_get(c, "containerID"));

		if (name && id && id[0] && strlen(name) <= AGENT_K8S_MAX_VALUE &&
		    strlen(id) <= AGENT_K8S_MAX_VALUE)
			kv_add_cstr(&pod->containers, k8s_container_id(id), name);
	}
	return 0;
}

/* The owner's name without the last "-suffix" (ReplicaSet -> Deployment, Job -> CronJob). */
static void k8s_owner_parent(struct k8s_pod *pod, const char *attr, const char *name)
{
	const char *dash = strrchr(name, '-');

	if (dash && dash != name && dash[1])
		kv_add(&pod->attrs, attr, strlen(attr), name, (size_t)(dash - name));
}

static int k8s_parse_owners(json_t *a, struct k8s_pod *pod, struct prof_err *err)
{
	static const struct {
		const char *kind, *attr, *parent;
	} kinds[] = {
		{ "ReplicaSet", "k8s.replicaset.name", "k8s.deployment.name" },
		{ "DaemonSet", "k8s.daemonset.name", NULL },
		{ "StatefulSet", "k8s.statefulset.name", NULL },
		{ "Job", "k8s.job.name", "k8s.cronjob.name" },
		{ "CronJob", "k8s.cronjob.name", NULL },
	};
	size_t i;
	json_t *o;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return prof_err_set(err, -PROF_EFORMAT, -1,
				    "pod %s: metadata.ownerReferences is not an array", pod->uid);
	json_array_foreach(a, i, o)
	{
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const char *name = json_string_value(json_object_get(o, "name"));

		if (!kind || !name || strlen(name) > AGENT_K8S_MAX_VALUE)
			continue;
		for (size_t k = 0; k < PROF_ARRAY_SIZE(kinds); k++) {
			if (strcmp(kind, kinds[k].kind))
				continue;
			kv_add_cstr(&pod->attrs, kinds[k].attr, name);
			/* A Deployment's ReplicaSet is <deployment>-<pod-template-hash>; a
			 * CronJob's Job is <cronjob>-<schedule time>. */
			if (kinds[k].parent)
				k8s_owner_parent(pod, kinds[k].parent, name);
		}
	}
	return 0;
}

static void k8s_pod_free(struct k8s_pod *p)
{
	free(p->uid);
	VEC_FREE(&p->attrs);
	VEC_FREE(&p->containers);
}

static int k8s_pod_cmp(const void *a, const void *b)
{
	return strcmp(((const struct k8s_pod *)a)->uid, ((const struct k8s_pod *)b)->uid);
}

static const char *k8s_str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && strlen(s) <= AGENT_K8S_MAX_VALUE ? s : NULL;
}

static int k8s_parse_pod(json_t *item, struct k8s_pod *pod, uint64_t *skipped, struct prof_err *err)
{
	json_t *md = json_object_get(item, "metadata");
	json_t *spec = json_object_get(item, "spec");
	json_t *st = json_object_get(item, "status");
	const char *s;
	size_t nkv = 0;
	int rc;

	memset(pod, 0, sizeof(*pod));
	if (!json_is_object(md) || !(s = k8s_str(md, "uid")) || !s[0])
		return 1; /* skipped */
	pod->uid = xstrdup(s);
	if ((s = k8s_str(md, "namespace")) != NULL)
		kv_add_cstr(&pod->attrs, "k8s.namespace.name", s);
	if ((s = k8s_str(md, "name")) != NULL)
		kv_add_cstr(&pod->attrs, "k8s.pod.name", s);
	if (json_is_object(spec) && (s = k8s_str(spec, "nodeName")) != NULL)
		kv_add_cstr(&pod->attrs, "k8s.node.name", s);
	rc = k8s_parse_owners(json_object_get(md, "ownerReferences"), pod, err);
	if (!rc)
		rc = k8s_parse_map(json_object_get(md, "labels"), "k8s.pod.label.",
				   "metadata.labels", pod, &nkv, skipped, err);
	if (!rc)
		rc = k8s_parse_map(json_object_get(md, "annotations"), "k8s.pod.annotation.",
				   "metadata.annotations", pod, &nkv, skipped, err);
	if (!rc && json_is_object(st)) {
		static const char *const fields[] = { "containerStatuses", "initContainerStatuses",
						      "ephemeralContainerStatuses" };

		for (size_t i = 0; !rc && i < PROF_ARRAY_SIZE(fields); i++)
			rc = k8s_parse_statuses(json_object_get(st, fields[i]), fields[i], pod,
						err);
	}
	if (rc)
		k8s_pod_free(pod);
	return rc;
}

int agent_k8s_parse(const char *json, size_t n, struct agent_k8s_snapshot **out, uint64_t *skipped,
		    struct prof_err *err)
{
	json_error_t je;
	json_t *root, *items, *item;
	struct agent_k8s_snapshot *s;
	uint64_t skip = 0;
	size_t i;
	int rc = 0;

	*out = NULL;
	root = json_loadb(json, n, 0, &je);
	if (!root)
		return prof_err_set(err, -PROF_EFORMAT, je.position,
				    "kubelet pod list: bad JSON at line %d column %d: %s", je.line,
				    je.column, je.text);
	items = json_object_get(root, "items");
	if (!json_is_object(root) || (items && !json_is_null(items) && !json_is_array(items))) {
		json_decref(root);
		return prof_err_set(err, -PROF_EFORMAT, -1,
				    "kubelet pod list: not a PodList (items must be an array)");
	}
	s = xcalloc(1, sizeof(*s));
	json_array_foreach(items, i, item)
	{
		struct k8s_pod pod;

		if (s->pods.n >= AGENT_K8S_MAX_PODS) {
			skip++;
			continue;
		}
		rc = k8s_parse_pod(item, &pod, &skip, err);
		if (rc < 0)
			break;
		if (rc == 0)
			VEC_PUSH(&s->pods, pod);
		rc = 0;
	}
	json_decref(root);
	if (rc < 0) {
		agent_k8s_snapshot_free(s);
		return rc;
	}
	if (s->pods.n > 1)
		qsort(s->pods.v, s->pods.n, sizeof(s->pods.v[0]), k8s_pod_cmp);
	if (skipped)
		*skipped = skip;
	*out = s;
	return 0;
}

void agent_k8s_snapshot_free(struct agent_k8s_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->pods.n; i++)
		k8s_pod_free(&s->pods.v[i]);
	VEC_FREE(&s->pods);
	free(s);
}

size_t agent_k8s_snapshot_pods(const struct agent_k8s_snapshot *s)
{
	return s ? s->pods.n : 0;
}

int agent_k8s_snapshot_add_attrs(const struct agent_k8s_snapshot *s, const char *pod_uid,
				 const char *container_id, struct model_profile *p)
{
	struct k8s_pod key = { .uid = (char *)pod_uid };
	const struct k8s_pod *pod;

	if (!s || !pod_uid || !pod_uid[0] || !s->pods.n)
		return 0;
	pod = bsearch(&key, s->pods.v, s->pods.n, sizeof(s->pods.v[0]), k8s_pod_cmp);
	if (!pod)
		return 0;
	for (size_t off = 0; off < pod->attrs.n;) {
		const char *k = pod->attrs.v + off, *v = k + strlen(k) + 1;

		model_attr_add_str(p, k, v);
		off = (size_t)(v - pod->attrs.v) + strlen(v) + 1;
	}
	for (size_t off = 0; container_id && container_id[0] && off < pod->containers.n;) {
		const char *id = pod->containers.v + off, *name = id + strlen(id) + 1;

		if (!strcmp(id, container_id)) {
			model_attr_add_str(p, "k8s.container.name", name);
			break;
		}
		off = (size_t)(name - pod->containers.v) + strlen(name) + 1;
	}
	return 1;
}

/* ---- the refresher -------------------------------------------------------------------- */

struct k8s_body {
	char *p;
	size_t n, cap;
	bool over;
};

static size_t k8s_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct k8s_body *b = arg;
	size_t n = size * nmemb;

	if (b->n + n > b->cap) {
		b->over = true;
		return 0; /* abort the transfer */
	}
	b->p = xrealloc(b->p, b->n + n + 1);
	memcpy(b->p + b->n, data, n);
	b->n += n;
	return n;
}

/* The token file's first line, or NULL when absent or empty. Caller frees. */
static char *k8s_read_token(const char *path)
{
	char buf[K8S_MAX_TOKEN];
	FILE *f = path ? fopen(path, "re") : NULL;
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return buf[0] ? xstrdup(buf) : NULL;
}

/* One fetch + parse; on success the snapshot is replaced. */
static void k8s_fetch(struct agent_k8s *k)
{
	struct k8s_body body = { .cap = k->o.max_bytes };
	struct curl_slist *hdrs = NULL;
	struct agent_k8s_snapshot *snap = NULL, *old;
	struct prof_err err;
	char *token = k8s_read_token(k->token_file);
	long status = 0;
	uint64_t skipped = 0;
	CURLcode cc;
	CURL *c = curl_easy_init();

	prof_err_init(&err);
	if (!c) {
		free(token);
		return;
	}
	if (token) {
		char *h = xasprintf("Authorization: Bearer %s", token);

		hdrs = curl_slist_append(hdrs, h);
		free(h);
	}
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	curl_easy_setopt(c, CURLOPT_URL, k->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, k->o.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, PROF_MIN(k->o.timeout_ms, 5000L));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "profd-agent");
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, k8s_on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	if (k->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
	if (k->o.insecure) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	free(token);

	if (cc != CURLE_OK || status != 200) {
		if (body.over)
			log_warn("k8s: kubelet pod list from %s is larger than %zu bytes", k->url,
				 k->o.max_bytes);
		else if (cc != CURLE_OK)
			log_warn("k8s: fetching %s failed: %s", k->url, curl_easy_strerror(cc));
		else
			log_warn("k8s: fetching %s: HTTP %ld%s", k->url, status,
				 status == 401 || status == 403
					 ? " (the service account needs get on nodes/proxy)"
					 : "");
		pthread_mutex_lock(&k->mu);
		k->stats.fetch_errors++;
		pthread_mutex_unlock(&k->mu);
		free(body.p);
		return;
	}
	if (agent_k8s_parse(body.p ? body.p : "", body.n, &snap, &skipped, &err)) {
		log_warn("k8s: %s: %s", k->url, err.msg);
		pthread_mutex_lock(&k->mu);
		k->stats.fetch_errors++;
		pthread_mutex_unlock(&k->mu);
		free(body.p);
		return;
	}
	free(body.p);
	pthread_rwlock_wrlock(&k->lock);
	old = k->snap;
	k->snap = snap;
	pthread_rwlock_unlock(&k->lock);
	agent_k8s_snapshot_free(old);
	pthread_mutex_lock(&k->mu);
	k->stats.fetches++;
	k->stats.pods = agent_k8s_snapshot_pods(snap);
	k->stats.skipped = skipped;
	pthread_mutex_unlock(&k->mu);
	log_debug("k8s: %zu pods from %s", agent_k8s_snapshot_pods(snap), k->url);
}

static void *k8s_thread(void *arg)
{
	struct agent_k8s *k = arg;

	pthread_mutex_lock(&k->mu);
	while (!k->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += k->o.refresh_ms / 1000;
		ts.tv_nsec += (k->o.refresh_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!k->stop && !k->wake)
			if (pthread_cond_timedwait(&k->cond, &k->mu, &ts) != 0)
				break;
		if (k->stop)
			break;
		k->wake = false;
		k->last_fetch_ns = prof_now_ns();
		pthread_mutex_unlock(&k->mu);
		k8s_fetch(k);
		pthread_mutex_lock(&k->mu);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int agent_k8s_new(const struct agent_k8s_opts *o, struct agent_k8s **out, struct prof_err *err)
{
	struct agent_k8s *k;
	const char *url = o && o->url ? o->url : K8S_DEFAULT_URL;
	int rc;

	*out = NULL;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return prof_err_set(err, -EINVAL, -1, "--k8s-kubelet %s: not an http(s) URL", url);
	rc = prof_curl_load(err);
	if (rc)
		return rc;
	k = xcalloc(1, sizeof(*k));
	if (o)
		k->o = *o;
	k->url = xstrdup(url);
	k->token_file = xstrdup(k->o.token_file ? k->o.token_file : K8S_SA_DIR "/token");
	if (k->o.ca_file)
		k->ca_file = xstrdup(k->o.ca_file);
	else if (access(K8S_SA_DIR "/ca.crt", R_OK) == 0)
		k->ca_file = xstrdup(K8S_SA_DIR "/ca.crt");
	if (k->o.refresh_ms <= 0)
		k->o.refresh_ms = K8S_DEFAULT_REFRESH_MS;
	if (!k->o.max_bytes)
		k->o.max_bytes = K8S_DEFAULT_MAX_BYTES;
	if (k->o.timeout_ms <= 0)
		k->o.timeout_ms = 10000;
	pthread_rwlock_init(&k->lock, NULL);
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cond, NULL);
	k->last_fetch_ns = prof_now_ns();
	k8s_fetch(k);
	if (pthread_create(&k->thread, NULL, k8s_thread, k) == 0)
		k->thread_started = true;
	else
		log_warn("k8s: cannot start the refresher thread; pod names stay as first fetched");
	*out = k;
	return 0;
}

void agent_k8s_free(struct agent_k8s *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->mu);
	if (k->thread_started)
		pthread_join(k->thread, NULL);
	agent_k8s_snapshot_free(k->snap);
	pthread_rwlock_destroy(&k->lock);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cond);
	free(k->url);
	free(k->token_file);
	free(k->ca_file);
	free(k);
}

int agent_k8s_add_attrs(struct agent_k8s *k, const char *pod_uid, const char *container_id,
			struct model_profile *p)
{
	int found;

	if (!k)
		return 0;
	pthread_rwlock_rdlock(&k->lock);
	found = agent_k8s_snapshot_add_attrs(k->snap, pod_uid, container_id, p);
	pthread_rwlock_unlock(&k->lock);
	pthread_mutex_lock(&k->mu);
	k->stats.lookups++;
	if (!found && pod_uid && pod_uid[0]) {
		k->stats.misses++;
		/* A new pod: fetch early, but not more often than every 5 s. */
		if (prof_now_ns() - k->last_fetch_ns >= K8S_EARLY_REFRESH_NS) {
			k->last_fetch_ns = prof_now_ns();
			k->wake = true;
			pthread_cond_signal(&k->cond);
		}
	}
	pthread_mutex_unlock(&k->mu);
	return found;
}

void agent_k8s_get_stats(struct agent_k8s *k, struct agent_k8s_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	*st = k->stats;
	pthread_mutex_unlock(&k->mu);
}
