// SPDX-License-Identifier: Apache-2.0
/*
 * config.c - the scrape configuration (YAML, libyaml's document API) and
 * file_sd target files (JSON with jansson, or YAML); see config.h.
 *
 * Like server/config.c, a document is loaded whole (its size capped) and
 * walked along the schema only with base/yaml.h's helpers, so the walk's
 * depth is fixed whatever the input holds, and YAML aliases cannot make it
 * recurse. Aliases can make
 * a small file name many targets (a list of aliases of a long list), so
 * targets are counted against SCRAPE_MAX_TARGETS as they are added.
 * Target files come from whatever writes them (a deploy script, another
 * team): they are untrusted input, fuzzed by tests/fuzz/fuzz_scrape_config.c.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/yaml.h"
#include "scrape/config.h"

#include <jansson.h>

struct walk {
	struct ywalk y;
	size_t targets; /* added so far in the current job / file */
};

bool scrape_target_ok(const char *s)
{
	const char *colon, *host_end;
	uint64_t port;
	size_t n = strlen(s);

	if (!n || n > 512)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == '?' || s[i] == '#' ||
		    s[i] == '@' || s[i] == '\\' || (unsigned char)s[i] >= 0x7f)
			return false;
	if (s[0] == '[') {
		host_end = strchr(s, ']');
		if (!host_end || host_end == s + 1 || host_end[1] != ':')
			return false;
		colon = host_end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || colon == s || memchr(s, ':', (size_t)(colon - s)))
			return false;
	}
	return !parse_u64(colon + 1, &port) && port > 0 && port <= 65535;
}

/* labels: {k: v, ...} into @ls, checking names, lengths and duplicates. */
static int parse_labels(struct walk *w, const yaml_node_t *n, const char *what,
			struct scrape_labels *ls)
{
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, what)))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key, *val;

		if ((rc = ywalk_want_scalar(&w->y, k, what, &key)))
			return rc;
		if (!scrape_label_name_ok(key))
			return ywalk_err(&w->y, k, what,
					 "'%.60s' is not a label name ([A-Za-z_][A-Za-z0-9_.]*, at "
					 "most %d bytes)",
					 key, SCRAPE_MAX_LABEL_NAME);
		if (key[0] == '_' && key[1] == '_')
			return ywalk_err(&w->y, k, what,
					 "label names starting with __ are reserved");
		if ((rc = ywalk_want_scalar(&w->y, v, what, &val)))
			return rc;
		if (strlen(val) > SCRAPE_MAX_LABEL_VALUE)
			return ywalk_err(&w->y, v, what, "value of '%.60s' is longer than %d bytes",
					 key, SCRAPE_MAX_LABEL_VALUE);
		if (scrape_labels_get(ls, key))
			return ywalk_err(&w->y, k, what, "label '%.60s' is given twice", key);
		if (ls->l.n >= SCRAPE_MAX_LABELS)
			return ywalk_err(&w->y, k, what, "more than %d labels", SCRAPE_MAX_LABELS);
		scrape_labels_set(ls, key, val);
	}
	return 0;
}

/* One target group: {targets: [...], labels: {...}}. */
static int parse_group(struct walk *w, const yaml_node_t *n, const char *what,
		       struct scrape_group *g)
{
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, what)))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, what, "expected a key");
		if (!strcmp(key, "targets")) {
			ywalk_strings_free(g->targets, g->ntargets);
			if ((rc = ywalk_want_strings(&w->y, v, "targets", SCRAPE_MAX_TARGETS,
						     &g->targets, &g->ntargets)))
				return rc;
			for (size_t i = 0; i < g->ntargets; i++)
				if (!scrape_target_ok(g->targets[i]))
					return ywalk_err(
						&w->y, v, "targets",
						"'%.100s' is not host:port (no scheme or path; "
						"the scheme is the job's `scheme`)",
						g->targets[i]);
			w->targets += g->ntargets;
			if (w->targets > SCRAPE_MAX_TARGETS) {
				ywalk_err(&w->y, v, "targets", "more than %d targets",
					  SCRAPE_MAX_TARGETS);
				if (w->y.err)
					w->y.err->code = -PROF_ETOOBIG;
				return -PROF_ETOOBIG;
			}
		} else if (!strcmp(key, "labels")) {
			scrape_labels_release(&g->labels);
			if ((rc = parse_labels(w, v, "labels", &g->labels)))
				return rc;
		} else {
			return ywalk_err(&w->y, k, what,
					 "unknown key '%.60s' (known: targets, labels)", key);
		}
	}
	return 0;
}

static int parse_groups(struct walk *w, const yaml_node_t *n, const char *what,
			struct scrape_group **out, size_t *nout)
{
	size_t cnt;
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_SEQUENCE_NODE, what)))
		return rc;
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt > SCRAPE_MAX_TARGETS)
		return ywalk_err(&w->y, n, what, "more than %d groups", SCRAPE_MAX_TARGETS);
	*out = xcalloc(cnt ? cnt : 1, sizeof(**out));
	*nout = 0;
	YWALK_SEQ_FOREACH(n, it)
	{
		if ((rc = parse_group(w, ywalk_node(&w->y, *it), what, &(*out)[(*nout)++])))
			return rc;
	}
	return 0;
}

void scrape_groups_free(struct scrape_group *g, size_t n)
{
	if (!g)
		return;
	for (size_t i = 0; i < n; i++) {
		ywalk_strings_free(g[i].targets, g[i].ntargets);
		scrape_labels_release(&g[i].labels);
	}
	free(g);
}

/* A pattern relative to the config file's directory. */
static char *resolve_path(const char *name, const char *pat)
{
	const char *slash = name ? strrchr(name, '/') : NULL;

	if (pat[0] == '/' || !slash)
		return xstrdup(pat);
	return xasprintf("%.*s/%s", (int)(slash - name), name, pat);
}

static int parse_file_sd(struct walk *w, const yaml_node_t *n, struct scrape_file_sd *f)
{
	int rc;

	f->refresh_ns = SCRAPE_DEFAULT_REFRESH_NS;
	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "file_sd_configs")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "file_sd_configs", "expected a key");
		if (!strcmp(key, "files")) {
			ywalk_strings_free(f->files, f->nfiles);
			if ((rc = ywalk_want_strings(&w->y, v, "file_sd_configs.files", 256,
						     &f->files, &f->nfiles)))
				return rc;
			for (size_t i = 0; i < f->nfiles; i++) {
				char *p;

				if (!*f->files[i])
					return ywalk_err(&w->y, v, "file_sd_configs.files",
							 "empty pattern");
				p = resolve_path(w->y.name, f->files[i]);
				free(f->files[i]);
				f->files[i] = p;
			}
		} else if (!strcmp(key, "refresh_interval")) {
			if ((rc = ywalk_want_duration(&w->y, v, "file_sd_configs.refresh_interval",
						      &f->refresh_ns)))
				return rc;
		} else {
			return ywalk_err(&w->y, k, "file_sd_configs",
					 "unknown key '%.60s' (known: files, refresh_interval)",
					 key);
		}
	}
	if (!f->nfiles)
		return ywalk_err(&w->y, n, "file_sd_configs", "missing: files (a list of globs)");
	return 0;
}

static const char *const k8s_roles[] = { "pod", "endpoints", "service", "node" };

const char *scrape_k8s_role_name(enum scrape_k8s_role r)
{
	return (size_t)r < PROF_ARRAY_SIZE(k8s_roles) ? k8s_roles[r] : "?";
}

static int parse_k8s_role(struct walk *w, const yaml_node_t *v, const char *what,
			  enum scrape_k8s_role *out)
{
	const char *s;
	int rc;

	if ((rc = ywalk_want_scalar(&w->y, v, what, &s)))
		return rc;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(k8s_roles); i++)
		if (!strcmp(s, k8s_roles[i])) {
			*out = (enum scrape_k8s_role)i;
			return 0;
		}
	return ywalk_err(&w->y, v, what, "expected pod, endpoints, service or node, got '%.60s'",
			 s);
}

/* A scalar into *@dst (replacing it); a path is made absolute against the config's directory. */
static int want_str(struct walk *w, const yaml_node_t *v, const char *what, bool path, char **dst)
{
	const char *s;
	int rc;

	if ((rc = ywalk_want_scalar(&w->y, v, what, &s)))
		return rc;
	if (!*s || strlen(s) > 4096)
		return ywalk_err(&w->y, v, what, "expected 1..4096 bytes");
	free(*dst);
	*dst = path ? resolve_path(w->y.name, s) : xstrdup(s);
	return 0;
}

static int parse_tls(struct walk *w, const yaml_node_t *n, struct scrape_tls_conf *t)
{
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "tls_config")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "tls_config", "expected a key");
		if (!strcmp(key, "ca_file"))
			rc = want_str(w, v, "tls_config.ca_file", true, &t->ca_file);
		else if (!strcmp(key, "cert_file"))
			rc = want_str(w, v, "tls_config.cert_file", true, &t->cert_file);
		else if (!strcmp(key, "key_file"))
			rc = want_str(w, v, "tls_config.key_file", true, &t->key_file);
		else if (!strcmp(key, "insecure_skip_verify"))
			rc = ywalk_want_bool(&w->y, v, "tls_config.insecure_skip_verify",
					     &t->insecure_skip_verify);
		else
			rc = ywalk_err(&w->y, k, "tls_config",
				       "unknown key '%.60s' (known: ca_file, cert_file, key_file, "
				       "insecure_skip_verify)",
				       key);
		if (rc)
			return rc;
	}
	if (!t->cert_file != !t->key_file)
		return ywalk_err(&w->y, n, "tls_config", "cert_file and key_file go together");
	return 0;
}

static int parse_k8s_namespaces(struct walk *w, const yaml_node_t *n, struct scrape_k8s_sd *k8)
{
	const char *what = "kubernetes_sd_configs.namespaces";
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, what)))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, what, "expected a key");
		if (!strcmp(key, "names")) {
			ywalk_strings_free(k8->namespaces, k8->nnamespaces);
			if ((rc = ywalk_want_strings(&w->y, v, "namespaces.names", 64,
						     &k8->namespaces, &k8->nnamespaces)))
				return rc;
			for (size_t i = 0; i < k8->nnamespaces; i++) {
				const char *s = k8->namespaces[i];
				size_t len = strlen(s);

				/* A DNS label (RFC 1123), as Kubernetes names namespaces. */
				bool ok = len && len <= 63;

				for (size_t c = 0; c < len && ok; c++)
					ok = (s[c] >= 'a' && s[c] <= 'z') ||
					     (s[c] >= '0' && s[c] <= '9') || s[c] == '-';
				if (!ok)
					return ywalk_err(&w->y, v, "namespaces.names",
							 "'%.70s' is not a namespace name "
							 "([a-z0-9-], 1..63 bytes)",
							 s);
			}
		} else if (!strcmp(key, "own_namespace")) {
			if ((rc = ywalk_want_bool(&w->y, v, "namespaces.own_namespace",
						  &k8->own_namespace)))
				return rc;
		} else {
			return ywalk_err(&w->y, k, what,
					 "unknown key '%.60s' (known: names, own_namespace)", key);
		}
	}
	return 0;
}

static int parse_k8s_selector(struct walk *w, const yaml_node_t *n, struct scrape_k8s_selector *s)
{
	const char *what = "kubernetes_sd_configs.selectors";
	bool have_role = false;
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, what)))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, what, "expected a key");
		if (!strcmp(key, "role")) {
			rc = parse_k8s_role(w, v, "selectors.role", &s->role);
			have_role = true;
		} else if (!strcmp(key, "label")) {
			rc = want_str(w, v, "selectors.label", false, &s->label);
		} else if (!strcmp(key, "field")) {
			rc = want_str(w, v, "selectors.field", false, &s->field);
		} else {
			rc = ywalk_err(&w->y, k, what,
				       "unknown key '%.60s' (known: role, label, field)", key);
		}
		if (rc)
			return rc;
	}
	if (!have_role)
		return ywalk_err(&w->y, n, what, "missing: role");
	return 0;
}

static int parse_k8s_sd(struct walk *w, const yaml_node_t *n, struct scrape_k8s_sd *k8)
{
	const char *what = "kubernetes_sd_configs";
	bool have_role = false;
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, what)))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, what, "expected a key");
		if (!strcmp(key, "role")) {
			rc = parse_k8s_role(w, v, "kubernetes_sd_configs.role", &k8->role);
			have_role = true;
		} else if (!strcmp(key, "api_server")) {
			rc = want_str(w, v, "kubernetes_sd_configs.api_server", false,
				      &k8->api_server);
			if (!rc && strncmp(k8->api_server, "http://", 7) &&
			    strncmp(k8->api_server, "https://", 8))
				rc = ywalk_err(&w->y, v, "kubernetes_sd_configs.api_server",
					       "expected an http:// or https:// URL, got '%.60s'",
					       k8->api_server);
		} else if (!strcmp(key, "kubeconfig_file")) {
			rc = want_str(w, v, "kubernetes_sd_configs.kubeconfig_file", true,
				      &k8->kubeconfig_file);
		} else if (!strcmp(key, "bearer_token_file")) {
			rc = want_str(w, v, "kubernetes_sd_configs.bearer_token_file", true,
				      &k8->bearer_token_file);
		} else if (!strcmp(key, "tls_config")) {
			rc = parse_tls(w, v, &k8->tls);
		} else if (!strcmp(key, "namespaces")) {
			rc = parse_k8s_namespaces(w, v, k8);
		} else if (!strcmp(key, "selectors")) {
			size_t cnt;

			if (k8->selectors)
				return ywalk_err(&w->y, k, "selectors", "given twice");
			if ((rc = ywalk_want_type(&w->y, v, YAML_SEQUENCE_NODE, "selectors")))
				return rc;
			cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (cnt > 16)
				return ywalk_err(&w->y, v, "selectors", "more than 16 entries");
			k8->selectors = xcalloc(cnt ? cnt : 1, sizeof(*k8->selectors));
			YWALK_SEQ_FOREACH(v, it)
			{
				if ((rc = parse_k8s_selector(w, ywalk_node(&w->y, *it),
							     &k8->selectors[k8->nselectors++])))
					return rc;
			}
		} else {
			rc = ywalk_err(
				&w->y, k, what,
				"unknown key '%.60s' (known: role, namespaces, selectors, "
				"api_server, kubeconfig_file, bearer_token_file, tls_config)",
				key);
		}
		if (rc)
			return rc;
	}
	if (!have_role)
		return ywalk_err(&w->y, n, what, "missing: role (pod, endpoints, service or node)");
	if (k8->api_server && k8->kubeconfig_file)
		return ywalk_err(&w->y, n, what,
				 "api_server and kubeconfig_file exclude each other");
	for (size_t i = 0; i < k8->nselectors; i++)
		for (size_t j = 0; j < i; j++)
			if (k8->selectors[i].role == k8->selectors[j].role)
				return ywalk_err(&w->y, n, "selectors",
						 "role '%s' is given twice (one selector per role, "
						 "as Prometheus)",
						 scrape_k8s_role_name(k8->selectors[i].role));
	return 0;
}

static void k8s_sd_release(struct scrape_k8s_sd *k8)
{
	free(k8->api_server);
	free(k8->kubeconfig_file);
	free(k8->bearer_token_file);
	free(k8->tls.ca_file);
	free(k8->tls.cert_file);
	free(k8->tls.key_file);
	ywalk_strings_free(k8->namespaces, k8->nnamespaces);
	for (size_t i = 0; i < k8->nselectors; i++) {
		free(k8->selectors[i].label);
		free(k8->selectors[i].field);
	}
	free(k8->selectors);
}

static int parse_relabel(struct walk *w, const yaml_node_t *n, struct scrape_relabel *r)
{
	struct prof_err rerr;
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "relabel_configs")))
		return rc;
	r->line = (unsigned)n->start_mark.line + 1;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k), *s;

		if (!key)
			return ywalk_err(&w->y, k, "relabel_configs", "expected a key");
		if (!strcmp(key, "source_labels")) {
			ywalk_strings_free(r->source_labels, r->nsource);
			if ((rc = ywalk_want_strings(&w->y, v, "relabel_configs.source_labels",
						     SCRAPE_MAX_LABELS, &r->source_labels,
						     &r->nsource)))
				return rc;
		} else if (!strcmp(key, "action")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "relabel_configs.action", &s)))
				return rc;
			if (scrape_relabel_action_parse(s, &r->action))
				return ywalk_err(&w->y, v, "relabel_configs.action",
						 "expected replace, keep, drop, hashmod, labelmap, "
						 "labeldrop or labelkeep, got '%.60s'",
						 s);
		} else if (!strcmp(key, "separator") || !strcmp(key, "regex") ||
			   !strcmp(key, "target_label") || !strcmp(key, "replacement")) {
			char **dst = !strcmp(key, "separator")	    ? &r->separator
				     : !strcmp(key, "regex")	    ? &r->regex
				     : !strcmp(key, "target_label") ? &r->target_label
								    : &r->replacement;

			if ((rc = ywalk_want_scalar(&w->y, v, key, &s)))
				return rc;
			free(*dst);
			*dst = xstrdup(s);
		} else if (!strcmp(key, "modulus")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "relabel_configs.modulus", &s)))
				return rc;
			if (parse_u64(s, &r->modulus) || !r->modulus)
				return ywalk_err(&w->y, v, "relabel_configs.modulus",
						 "expected a positive integer, got '%.60s'", s);
		} else {
			return ywalk_err(
				&w->y, k, "relabel_configs",
				"unknown key '%.60s' (known: source_labels, separator, regex, "
				"target_label, replacement, modulus, action)",
				key);
		}
	}
	prof_err_init(&rerr);
	if (scrape_relabel_compile(r, &rerr))
		return ywalk_err(&w->y, n, "relabel_configs", "%s", rerr.msg);
	return 0;
}

static const struct {
	const char *name, *path;
	enum scrape_kind kind;
	bool delta;
} known_profiles[] = {
	{ "cpu", "/debug/pprof/profile", SCRAPE_KIND_CPU, false },
	{ "heap", "/debug/pprof/heap", SCRAPE_KIND_HEAP, false },
	{ "allocs", "/debug/pprof/allocs", SCRAPE_KIND_ALLOCS, true },
	{ "mutex", "/debug/pprof/mutex", SCRAPE_KIND_MUTEX, true },
	{ "block", "/debug/pprof/block", SCRAPE_KIND_BLOCK, true },
	{ "goroutine", "/debug/pprof/goroutine", SCRAPE_KIND_GOROUTINE, false },
	{ "threadcreate", "/debug/pprof/threadcreate", SCRAPE_KIND_THREADCREATE, true },
};
static const char *const default_profiles[] = { "cpu",	 "heap",  "allocs",
						"mutex", "block", "goroutine" };

const char *scrape_kind_type_name(enum scrape_kind k)
{
	switch (k) {
	case SCRAPE_KIND_CPU:
		return "process_cpu";
	case SCRAPE_KIND_HEAP:
	case SCRAPE_KIND_ALLOCS:
		return "memory";
	case SCRAPE_KIND_MUTEX:
		return "mutex";
	case SCRAPE_KIND_BLOCK:
		return "block";
	case SCRAPE_KIND_GOROUTINE:
		return "goroutine";
	case SCRAPE_KIND_THREADCREATE:
		return "threadcreate";
	case SCRAPE_KIND_CUSTOM:
		break;
	}
	return NULL;
}

int64_t scrape_cpu_seconds(int64_t interval_ns)
{
	int64_t s = interval_ns / 1000000000LL - 1;

	return s < 1 ? 1 : s;
}

static bool profile_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static bool path_ok(const char *s)
{
	if (s[0] != '/' || strlen(s) > 1024)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '#' || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* Fill @p from a known name; -EINVAL when unknown. */
static int profile_known(const char *name, struct scrape_profile_conf *p)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(known_profiles); i++)
		if (!strcmp(name, known_profiles[i].name)) {
			p->name = xstrdup(name);
			p->path = xstrdup(known_profiles[i].path);
			p->kind = known_profiles[i].kind;
			p->delta = known_profiles[i].delta;
			return 0;
		}
	return -EINVAL;
}

static void profile_release(struct scrape_profile_conf *p)
{
	free(p->name);
	free(p->path);
}

static int parse_profile(struct walk *w, const yaml_node_t *n, struct scrape_profile_conf *p)
{
	const char *s, *path = NULL;
	bool have_delta = false, delta = false;
	int rc;

	if (n && n->type == YAML_SCALAR_NODE) {
		if ((rc = ywalk_want_scalar(&w->y, n, "profiles", &s)))
			return rc;
		if (profile_known(s, p))
			return ywalk_err(
				&w->y, n, "profiles",
				"unknown profile '%.60s' (known: cpu, heap, allocs, mutex, block, "
				"goroutine, threadcreate; others need {name: X, path: /...})",
				s);
		return 0;
	}
	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "profiles")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "profiles", "expected a key");
		if (!strcmp(key, "name")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "profiles.name", &s)))
				return rc;
			if (!profile_name_ok(s))
				return ywalk_err(
					&w->y, v, "profiles.name",
					"'%.60s' is not a name ([A-Za-z0-9_-], 1..64 bytes)", s);
			free(p->name);
			p->name = xstrdup(s);
		} else if (!strcmp(key, "path")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "profiles.path", &path)))
				return rc;
			if (!path_ok(path))
				return ywalk_err(
					&w->y, v, "profiles.path",
					"expected an absolute URL path such as /debug/pprof/heap, "
					"got '%.60s'",
					path);
		} else if (!strcmp(key, "delta")) {
			if ((rc = ywalk_want_bool(&w->y, v, "profiles.delta", &delta)))
				return rc;
			have_delta = true;
		} else if (!strcmp(key, "seconds")) {
			uint64_t sec;

			if ((rc = ywalk_want_scalar(&w->y, v, "profiles.seconds", &s)))
				return rc;
			if (parse_u64(s, &sec) || !sec || sec > 3600)
				return ywalk_err(&w->y, v, "profiles.seconds",
						 "expected whole seconds 1..3600, got '%.60s'", s);
			p->seconds = (int64_t)sec;
		} else {
			return ywalk_err(&w->y, k, "profiles",
					 "unknown key '%.60s' (known: name, path, delta, seconds)",
					 key);
		}
	}
	if (!p->name)
		return ywalk_err(&w->y, n, "profiles", "missing: name");
	char *name = p->name;
	int64_t sec = p->seconds;

	p->name = NULL;
	if (profile_known(name, p)) {
		if (!path) {
			rc = ywalk_err(&w->y, n, "profiles",
				       "profile '%.60s' is not a known one: give its path", name);
			free(name);
			return rc;
		}
		p->name = name;
		p->kind = SCRAPE_KIND_CUSTOM;
	} else {
		free(name);
	}
	if (path) {
		free(p->path);
		p->path = xstrdup(path);
	}
	if (have_delta)
		p->delta = delta;
	p->seconds = sec;
	if (sec && p->kind != SCRAPE_KIND_CPU)
		return ywalk_err(&w->y, n, "profiles.seconds",
				 "only the cpu profile takes seconds");
	return 0;
}

struct defaults {
	int64_t interval_ns, timeout_ns;
	size_t body_size_limit;
	bool have_timeout;
};

static void job_release(struct scrape_job_conf *j)
{
	free(j->name);
	free(j->scheme);
	free(j->path_prefix);
	free(j->dataset);
	scrape_groups_free(j->groups, j->ngroups);
	for (size_t i = 0; i < j->nfile_sds; i++)
		ywalk_strings_free(j->file_sds[i].files, j->file_sds[i].nfiles);
	free(j->file_sds);
	for (size_t i = 0; i < j->nk8s_sds; i++)
		k8s_sd_release(&j->k8s_sds[i]);
	free(j->k8s_sds);
	for (size_t i = 0; i < j->nrelabel; i++)
		scrape_relabel_release(&j->relabel[i]);
	free(j->relabel);
	for (size_t i = 0; i < j->nprofiles; i++)
		profile_release(&j->profiles[i]);
	free(j->profiles);
}

static void job_default_profiles(struct scrape_job_conf *j)
{
	j->profiles = xcalloc(PROF_ARRAY_SIZE(default_profiles), sizeof(*j->profiles));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(default_profiles); i++)
		(void)profile_known(default_profiles[i], &j->profiles[j->nprofiles++]);
}

/* After the keys: defaults, CPU seconds, cross-field checks. */
static int job_finish(struct walk *w, const yaml_node_t *n, struct scrape_job_conf *j,
		      bool have_timeout)
{
	if (!have_timeout && j->timeout_ns > j->interval_ns)
		j->timeout_ns = j->interval_ns;
	if (j->timeout_ns > j->interval_ns)
		return ywalk_err(&w->y, n, "scrape_timeout",
				 "job '%.60s': scrape_timeout is longer than scrape_interval",
				 j->name);
	if (!j->nprofiles)
		job_default_profiles(j);
	for (size_t i = 0; i < j->nprofiles; i++) {
		struct scrape_profile_conf *p = &j->profiles[i];

		for (size_t k = 0; k < i; k++)
			if (!strcmp(j->profiles[k].name, p->name))
				return ywalk_err(&w->y, n, "profiles",
						 "job '%.60s': profile '%.60s' twice", j->name,
						 p->name);
		if (p->kind != SCRAPE_KIND_CPU)
			continue;
		if (!p->seconds)
			p->seconds = scrape_cpu_seconds(j->interval_ns);
		else if (p->seconds * 1000000000LL >= j->interval_ns)
			return ywalk_err(&w->y, n, "profiles.seconds",
					 "job '%.60s': cpu seconds (%" PRId64
					 ") must be shorter than scrape_interval",
					 j->name, p->seconds);
	}
	if (!j->scheme)
		j->scheme = xstrdup("http");
	if (!j->path_prefix)
		j->path_prefix = xstrdup("");
	if (!j->target_limit || j->target_limit > SCRAPE_MAX_TARGETS)
		j->target_limit = SCRAPE_MAX_TARGETS;
	return 0;
}

static int parse_job(struct walk *w, const yaml_node_t *n, const struct defaults *d,
		     struct scrape_job_conf *j)
{
	bool have_timeout = d->have_timeout;
	const char *s;
	int rc;

	j->interval_ns = d->interval_ns;
	j->timeout_ns = d->timeout_ns;
	j->body_size_limit = d->body_size_limit;
	w->targets = 0;
	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "scrape_configs")))
		return rc;
	j->line = (unsigned)n->start_mark.line + 1;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "scrape_configs", "expected a key");
		if (!strcmp(key, "job_name")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "job_name", &s)))
				return rc;
			if (!*s || strlen(s) > 128)
				return ywalk_err(&w->y, v, "job_name", "expected 1..128 bytes");
			free(j->name);
			j->name = xstrdup(s);
		} else if (!strcmp(key, "scrape_interval")) {
			if ((rc = ywalk_want_duration(&w->y, v, "scrape_interval",
						      &j->interval_ns)))
				return rc;
		} else if (!strcmp(key, "scrape_timeout")) {
			if ((rc = ywalk_want_duration(&w->y, v, "scrape_timeout", &j->timeout_ns)))
				return rc;
			have_timeout = true;
		} else if (!strcmp(key, "scheme")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "scheme", &s)))
				return rc;
			if (strcmp(s, "http") && strcmp(s, "https"))
				return ywalk_err(&w->y, v, "scheme",
						 "expected http or https, got '%.60s'", s);
			free(j->scheme);
			j->scheme = xstrdup(s);
		} else if (!strcmp(key, "path_prefix")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "path_prefix", &s)))
				return rc;
			if (*s && !path_ok(s))
				return ywalk_err(
					&w->y, v, "path_prefix",
					"expected an absolute URL path such as /app, got '%.60s'",
					s);
			free(j->path_prefix);
			j->path_prefix = xstrndup(s, strlen(s) - (*s && s[strlen(s) - 1] == '/'));
		} else if (!strcmp(key, "body_size_limit")) {
			if ((rc = ywalk_want_size(&w->y, v, "body_size_limit",
						  &j->body_size_limit)))
				return rc;
		} else if (!strcmp(key, "target_limit")) {
			uint64_t lim;

			if ((rc = ywalk_want_scalar(&w->y, v, "target_limit", &s)))
				return rc;
			if (parse_u64(s, &lim) || lim > SCRAPE_MAX_TARGETS)
				return ywalk_err(&w->y, v, "target_limit",
						 "expected 0..%d, got '%.60s'", SCRAPE_MAX_TARGETS,
						 s);
			j->target_limit = (size_t)lim;
		} else if (!strcmp(key, "dataset")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "dataset", &s)))
				return rc;
			free(j->dataset);
			j->dataset = xstrdup(s);
		} else if (!strcmp(key, "profiles")) {
			size_t cnt;

			if (j->nprofiles)
				return ywalk_err(&w->y, k, "profiles", "given twice");
			if ((rc = ywalk_want_type(&w->y, v, YAML_SEQUENCE_NODE, "profiles")))
				return rc;
			cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (!cnt || cnt > 32)
				return ywalk_err(&w->y, v, "profiles", "expected 1..32 profiles");
			j->profiles = xcalloc(cnt, sizeof(*j->profiles));
			YWALK_SEQ_FOREACH(v, it)
			{
				if ((rc = parse_profile(w, ywalk_node(&w->y, *it),
							&j->profiles[j->nprofiles++])))
					return rc;
			}
		} else if (!strcmp(key, "static_configs")) {
			if (j->groups)
				return ywalk_err(&w->y, k, "static_configs", "given twice");
			if ((rc = parse_groups(w, v, "static_configs", &j->groups, &j->ngroups)))
				return rc;
		} else if (!strcmp(key, "file_sd_configs")) {
			size_t cnt;

			if (j->file_sds)
				return ywalk_err(&w->y, k, "file_sd_configs", "given twice");
			if ((rc = ywalk_want_type(&w->y, v, YAML_SEQUENCE_NODE, "file_sd_configs")))
				return rc;
			cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (cnt > 64)
				return ywalk_err(&w->y, v, "file_sd_configs",
						 "more than 64 entries");
			j->file_sds = xcalloc(cnt ? cnt : 1, sizeof(*j->file_sds));
			YWALK_SEQ_FOREACH(v, it)
			{
				if ((rc = parse_file_sd(w, ywalk_node(&w->y, *it),
							&j->file_sds[j->nfile_sds++])))
					return rc;
			}
		} else if (!strcmp(key, "kubernetes_sd_configs")) {
			size_t cnt;

			if (j->k8s_sds)
				return ywalk_err(&w->y, k, "kubernetes_sd_configs", "given twice");
			if ((rc = ywalk_want_type(&w->y, v, YAML_SEQUENCE_NODE,
						  "kubernetes_sd_configs")))
				return rc;
			cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (cnt > 16)
				return ywalk_err(&w->y, v, "kubernetes_sd_configs",
						 "more than 16 entries");
			j->k8s_sds = xcalloc(cnt ? cnt : 1, sizeof(*j->k8s_sds));
			YWALK_SEQ_FOREACH(v, it)
			{
				if ((rc = parse_k8s_sd(w, ywalk_node(&w->y, *it),
						       &j->k8s_sds[j->nk8s_sds++])))
					return rc;
			}
		} else if (!strcmp(key, "relabel_configs")) {
			size_t cnt;

			if (j->relabel)
				return ywalk_err(&w->y, k, "relabel_configs", "given twice");
			if ((rc = ywalk_want_type(&w->y, v, YAML_SEQUENCE_NODE, "relabel_configs")))
				return rc;
			cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (cnt > 256)
				return ywalk_err(&w->y, v, "relabel_configs",
						 "more than 256 rules");
			j->relabel = xcalloc(cnt ? cnt : 1, sizeof(*j->relabel));
			YWALK_SEQ_FOREACH(v, it)
			{
				if ((rc = parse_relabel(w, ywalk_node(&w->y, *it),
							&j->relabel[j->nrelabel++])))
					return rc;
			}
		} else {
			return ywalk_err(&w->y, k, "scrape_configs",
					 "unknown key '%.60s' (known: job_name, scrape_interval, "
					 "scrape_timeout, scheme, path_prefix, body_size_limit, "
					 "target_limit, dataset, profiles, static_configs, "
					 "file_sd_configs, kubernetes_sd_configs, relabel_configs)",
					 key);
		}
	}
	if (!j->name)
		return ywalk_err(&w->y, n, "scrape_configs", "missing: job_name");
	return job_finish(w, n, j, have_timeout);
}

static void watch_release(struct scrape_watch_conf *x)
{
	free(x->name);
	ywalk_strings_free(x->files, x->nfiles);
	scrape_labels_release(&x->labels);
	free(x->dataset);
}

static int parse_watch(struct walk *w, const yaml_node_t *n, const struct defaults *d,
		       struct scrape_watch_conf *x)
{
	const char *s;
	int rc;

	x->poll_ns = SCRAPE_DEFAULT_POLL_NS;
	x->settle_ns = SCRAPE_DEFAULT_SETTLE_NS;
	x->max_file_size = d->body_size_limit;
	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "watch_configs")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "watch_configs", "expected a key");
		if (!strcmp(key, "job_name")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "watch_configs.job_name", &s)))
				return rc;
			if (!*s || strlen(s) > 128)
				return ywalk_err(&w->y, v, "watch_configs.job_name",
						 "expected 1..128 bytes");
			free(x->name);
			x->name = xstrdup(s);
		} else if (!strcmp(key, "files")) {
			ywalk_strings_free(x->files, x->nfiles);
			if ((rc = ywalk_want_strings(&w->y, v, "watch_configs.files", 256,
						     &x->files, &x->nfiles)))
				return rc;
			for (size_t i = 0; i < x->nfiles; i++) {
				char *p;

				if (!*x->files[i])
					return ywalk_err(&w->y, v, "watch_configs.files",
							 "empty pattern");
				p = resolve_path(w->y.name, x->files[i]);

				free(x->files[i]);
				x->files[i] = p;
			}
		} else if (!strcmp(key, "labels")) {
			scrape_labels_release(&x->labels);
			if ((rc = parse_labels(w, v, "watch_configs.labels", &x->labels)))
				return rc;
		} else if (!strcmp(key, "poll_interval")) {
			if ((rc = ywalk_want_duration(&w->y, v, "watch_configs.poll_interval",
						      &x->poll_ns)))
				return rc;
		} else if (!strcmp(key, "settle")) {
			if ((rc = ywalk_want_duration(&w->y, v, "watch_configs.settle",
						      &x->settle_ns)))
				return rc;
		} else if (!strcmp(key, "max_file_size")) {
			if ((rc = ywalk_want_size(&w->y, v, "watch_configs.max_file_size",
						  &x->max_file_size)))
				return rc;
		} else if (!strcmp(key, "dataset")) {
			if ((rc = ywalk_want_scalar(&w->y, v, "watch_configs.dataset", &s)))
				return rc;
			free(x->dataset);
			x->dataset = xstrdup(s);
		} else {
			return ywalk_err(&w->y, k, "watch_configs",
					 "unknown key '%.60s' (known: job_name, files, labels, "
					 "poll_interval, settle, max_file_size, dataset)",
					 key);
		}
	}
	if (!x->nfiles)
		return ywalk_err(&w->y, n, "watch_configs", "missing: files (a list of globs)");
	if (!x->name)
		x->name = xstrdup("files");
	return 0;
}

static int parse_global(struct walk *w, const yaml_node_t *n, struct defaults *d)
{
	int rc;

	if ((rc = ywalk_want_type(&w->y, n, YAML_MAPPING_NODE, "global")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "global", "expected a key");
		if (!strcmp(key, "scrape_interval")) {
			if ((rc = ywalk_want_duration(&w->y, v, "global.scrape_interval",
						      &d->interval_ns)))
				return rc;
		} else if (!strcmp(key, "scrape_timeout")) {
			if ((rc = ywalk_want_duration(&w->y, v, "global.scrape_timeout",
						      &d->timeout_ns)))
				return rc;
			d->have_timeout = true;
		} else if (!strcmp(key, "body_size_limit")) {
			if ((rc = ywalk_want_size(&w->y, v, "global.body_size_limit",
						  &d->body_size_limit)))
				return rc;
		} else {
			return ywalk_err(
				&w->y, k, "global",
				"unknown key '%.60s' (known: scrape_interval, scrape_timeout, "
				"body_size_limit)",
				key);
		}
	}
	return 0;
}

static int parse_root(struct walk *w, yaml_node_t *root, unsigned flags, struct scrape_config *c)
{
	struct defaults d = { SCRAPE_DEFAULT_INTERVAL_NS, SCRAPE_DEFAULT_TIMEOUT_NS,
			      SCRAPE_DEFAULT_BODY_LIMIT, false };
	yaml_node_t *jobs = NULL, *watches = NULL;
	int rc;

	if (!root)
		return (flags & SCRAPE_CONF_EMBEDDED)
			       ? 0
			       : ywalk_err(&w->y, NULL, "file", "the file is empty");
	if ((rc = ywalk_want_type(&w->y, root, YAML_MAPPING_NODE, "top level")))
		return rc;
	YWALK_MAP_FOREACH(root, pair)
	{
		yaml_node_t *k = ywalk_node(&w->y, pair->key), *v = ywalk_node(&w->y, pair->value);
		const char *key = ywalk_scalar(k);

		if (!key)
			return ywalk_err(&w->y, k, "top level", "expected a key");
		if (!strcmp(key, "scrape_configs"))
			jobs = v;
		else if (!strcmp(key, "watch_configs"))
			watches = v;
		else if (!strcmp(key, "global")) {
			if ((rc = parse_global(w, v, &d)))
				return rc;
		} else if (!(flags & SCRAPE_CONF_EMBEDDED))
			return ywalk_err(&w->y, k, "top level",
					 "unknown key '%.60s' (known: global, scrape_configs, "
					 "watch_configs)",
					 key);
	}
	if (jobs) {
		size_t cnt;

		if ((rc = ywalk_want_type(&w->y, jobs, YAML_SEQUENCE_NODE, "scrape_configs")))
			return rc;
		cnt = (size_t)(jobs->data.sequence.items.top - jobs->data.sequence.items.start);
		if (cnt > 1000)
			return ywalk_err(&w->y, jobs, "scrape_configs", "more than 1000 jobs");
		c->jobs = xcalloc(cnt ? cnt : 1, sizeof(*c->jobs));
		YWALK_SEQ_FOREACH(jobs, it)
		{
			struct scrape_job_conf *j = &c->jobs[c->njobs++];

			if ((rc = parse_job(w, ywalk_node(&w->y, *it), &d, j)))
				return rc;
			for (size_t i = 0; i + 1 < c->njobs; i++)
				if (!strcmp(c->jobs[i].name, j->name))
					return ywalk_err(&w->y, ywalk_node(&w->y, *it), "job_name",
							 "'%.60s' is used by two jobs", j->name);
		}
	}
	if (watches) {
		size_t cnt;

		if ((rc = ywalk_want_type(&w->y, watches, YAML_SEQUENCE_NODE, "watch_configs")))
			return rc;
		cnt = (size_t)(watches->data.sequence.items.top -
			       watches->data.sequence.items.start);
		if (cnt > 64)
			return ywalk_err(&w->y, watches, "watch_configs", "more than 64 entries");
		c->watches = xcalloc(cnt ? cnt : 1, sizeof(*c->watches));
		YWALK_SEQ_FOREACH(watches, it)
		{
			if ((rc = parse_watch(w, ywalk_node(&w->y, *it), &d,
					      &c->watches[c->nwatches++])))
				return rc;
		}
	}
	if (!(flags & SCRAPE_CONF_EMBEDDED) && !c->njobs && !c->nwatches)
		return ywalk_err(&w->y, root, "scrape_configs",
				 "missing: list at least one job (or watch_configs)");
	return 0;
}

/* Load @n bytes of YAML and call @fn on the root node (NULL when empty). */
static int with_yaml(const char *text, size_t n, const char *name, struct prof_err *err,
		     int (*fn)(struct walk *w, yaml_node_t *root, void *arg), void *arg)
{
	struct walk w = { .targets = 0 };
	yaml_node_t *root;
	int rc = ywalk_load(&w.y, text, n, name, err, &root);

	if (!rc)
		rc = fn(&w, root, arg);
	ywalk_release(&w.y);
	return rc;
}

struct root_arg {
	unsigned flags;
	struct scrape_config *c;
};

static int root_cb(struct walk *w, yaml_node_t *root, void *arg)
{
	struct root_arg *a = arg;

	return parse_root(w, root, a->flags, a->c);
}

int scrape_config_parse(const char *text, size_t n, const char *name, unsigned flags,
			struct scrape_config *c, struct prof_err *err)
{
	struct root_arg a = { flags, c };

	memset(c, 0, sizeof(*c));
	c->path = name ? xstrdup(name) : NULL;
	if (n > SCRAPE_MAX_CONFIG_FILE)
		return prof_err_set(err, -PROF_ETOOBIG, -1, "%s: larger than %zu bytes",
				    name ? name : "config", SCRAPE_MAX_CONFIG_FILE);
	return with_yaml(text, n, name ? name : "config", err, root_cb, &a);
}

int scrape_config_load(const char *path, unsigned flags, struct scrape_config *c,
		       struct prof_err *err)
{
	struct buf b;
	int rc;

	memset(c, 0, sizeof(*c));
	buf_init(&b, SCRAPE_MAX_CONFIG_FILE);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "%s: %s%s", path, prof_strerror(rc),
				    rc == -PROF_ETOOBIG ? " (the limit is 1 MiB)" : "");
	}
	rc = scrape_config_parse(b.p, b.len, path, flags, c, err);
	/* The server's file may hold secrets: wipe our copy. */
	if (b.p)
		memset(b.p, 0, b.len);
	buf_release(&b);
	return rc;
}

void scrape_config_release(struct scrape_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->njobs; i++)
		job_release(&c->jobs[i]);
	free(c->jobs);
	for (size_t i = 0; i < c->nwatches; i++)
		watch_release(&c->watches[i]);
	free(c->watches);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

int scrape_config_add_job(struct scrape_config *c, const char *job, char *const *targets, size_t n,
			  int64_t interval_ns, const char *profiles, struct prof_err *err)
{
	struct scrape_job_conf *j;
	int rc = 0;

	for (size_t i = 0; i < c->njobs; i++)
		if (!strcmp(c->jobs[i].name, job))
			return prof_err_set(err, -EINVAL, -1, "job '%s' is defined twice", job);
	for (size_t i = 0; i < n; i++)
		if (!scrape_target_ok(targets[i]))
			return prof_err_set(err, -EINVAL, -1,
					    "target '%.100s' is not host:port (no scheme or path)",
					    targets[i]);
	if (interval_ns <= 0)
		return prof_err_set(err, -EINVAL, -1, "the interval must be positive");
	c->jobs = xreallocarray(c->jobs, c->njobs + 1, sizeof(*c->jobs));
	j = &c->jobs[c->njobs++];
	memset(j, 0, sizeof(*j));
	j->name = xstrdup(job);
	j->interval_ns = interval_ns;
	j->timeout_ns = PROF_MIN(SCRAPE_DEFAULT_TIMEOUT_NS, interval_ns);
	j->body_size_limit = SCRAPE_DEFAULT_BODY_LIMIT;
	j->groups = xcalloc(1, sizeof(*j->groups));
	j->ngroups = 1;
	j->groups[0].targets = xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		j->groups[0].targets[i] = xstrdup(targets[i]);
	j->groups[0].ntargets = n;
	if (profiles) {
		char *list = xstrdup(profiles), *save = NULL;

		for (char *tok = strtok_r(list, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			struct scrape_profile_conf p = { 0 };

			if (j->nprofiles >= 32 || profile_known(tok, &p)) {
				rc = prof_err_set(
					err, -EINVAL, -1,
					"unknown profile '%.60s' (known: cpu, heap, allocs, "
					"mutex, block, goroutine, threadcreate)",
					tok);
				break;
			}
			j->profiles =
				xreallocarray(j->profiles, j->nprofiles + 1, sizeof(*j->profiles));
			j->profiles[j->nprofiles++] = p;
		}
		free(list);
		if (rc)
			return rc;
	}
	struct walk w = { .y = { .name = "command line", .err = err } };

	return job_finish(&w, NULL, j, false);
}

/* --- target files ------------------------------------------------------------------- */

static int sd_yaml_cb(struct walk *w, yaml_node_t *root, void *arg)
{
	struct scrape_group **out = ((void **)arg)[0];
	size_t *nout = ((void **)arg)[1];

	if (!root)
		return 0; /* an empty file: no targets */
	return parse_groups(w, root, "file", (struct scrape_group **)out, nout);
}

static int jerr(struct prof_err *err, const char *name, size_t gi, const char *fmt, ...)
	PROF_PRINTF(4, 5);
static int jerr(struct prof_err *err, const char *name, size_t gi, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(err, -EINVAL, -1, "%s: group %zu: %s", name, gi, msg);
}

static int sd_json(const char *text, size_t n, const char *name, struct scrape_group **out,
		   size_t *nout, struct prof_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	size_t total = 0, gi;
	json_t *g;
	int rc = 0;

	if (!root)
		return prof_err_set(err, -EINVAL, (int64_t)je.position, "%s:%d:%d: JSON: %s", name,
				    je.line, je.column, je.text);
	if (!json_is_array(root)) {
		json_decref(root);
		return prof_err_set(err, -EINVAL, -1,
				    "%s: expected a JSON list of {\"targets\": [...], \"labels\": "
				    "{...}} groups",
				    name);
	}
	if (json_array_size(root) > SCRAPE_MAX_TARGETS) {
		json_decref(root);
		return prof_err_set(err, -PROF_ETOOBIG, -1, "%s: more than %d groups", name,
				    SCRAPE_MAX_TARGETS);
	}
	*out = xcalloc(json_array_size(root) ? json_array_size(root) : 1, sizeof(**out));
	json_array_foreach(root, gi, g)
	{
		struct scrape_group *grp = &(*out)[(*nout)++];
		const char *key;
		json_t *v;

		if (!json_is_object(g)) {
			rc = jerr(err, name, gi, "expected an object");
			break;
		}
		json_object_foreach(g, key, v)
		{
			if (!strcmp(key, "targets")) {
				size_t ti;
				json_t *t;

				if (!json_is_array(v)) {
					rc = jerr(err, name, gi, "targets: expected a list");
					break;
				}
				total += json_array_size(v);
				if (total > SCRAPE_MAX_TARGETS) {
					rc = prof_err_set(err, -PROF_ETOOBIG, -1,
							  "%s: more than %d targets", name,
							  SCRAPE_MAX_TARGETS);
					break;
				}
				grp->targets = xcalloc(json_array_size(v) ? json_array_size(v) : 1,
						       sizeof(char *));
				json_array_foreach(v, ti, t)
				{
					const char *s = json_string_value(t);

					if (!s || strlen(s) != json_string_length(t) ||
					    !scrape_target_ok(s)) {
						rc = jerr(
							err, name, gi,
							"targets[%zu]: expected \"host:port\" (no "
							"scheme or path)",
							ti);
						break;
					}
					grp->targets[grp->ntargets++] = xstrdup(s);
				}
			} else if (!strcmp(key, "labels")) {
				const char *lk;
				json_t *lv;

				if (!json_is_object(v)) {
					rc = jerr(err, name, gi, "labels: expected an object");
					break;
				}
				json_object_foreach(v, lk, lv)
				{
					const char *s = json_string_value(lv);

					if (!scrape_label_name_ok(lk) ||
					    (lk[0] == '_' && lk[1] == '_')) {
						rc = jerr(err, name, gi,
							  "labels: '%.60s' is not a label name",
							  lk);
						break;
					}
					if (!s || strlen(s) != json_string_length(lv) ||
					    strlen(s) > SCRAPE_MAX_LABEL_VALUE) {
						rc = jerr(err, name, gi,
							  "labels.%.60s: expected a string of at "
							  "most %d bytes",
							  lk, SCRAPE_MAX_LABEL_VALUE);
						break;
					}
					if (grp->labels.l.n >= SCRAPE_MAX_LABELS) {
						rc = jerr(err, name, gi, "more than %d labels",
							  SCRAPE_MAX_LABELS);
						break;
					}
					scrape_labels_set(&grp->labels, lk, s);
				}
			} else {
				rc = jerr(err, name, gi,
					  "unknown key '%.60s' (known: targets, labels)", key);
			}
			if (rc)
				break;
		}
		if (rc)
			break;
	}
	json_decref(root);
	return rc;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);

	return n >= m && !strcmp(s + n - m, sfx);
}

int scrape_sd_parse(const char *text, size_t n, const char *name, struct scrape_group **out,
		    size_t *nout, struct prof_err *err)
{
	bool json;
	int rc;

	*out = NULL;
	*nout = 0;
	name = name ? name : "target file";
	if (n > SCRAPE_MAX_SD_FILE)
		return prof_err_set(err, -PROF_ETOOBIG, -1, "%s: larger than %zu bytes", name,
				    SCRAPE_MAX_SD_FILE);
	if (ends_with(name, ".json")) {
		json = true;
	} else if (ends_with(name, ".yml") || ends_with(name, ".yaml")) {
		json = false;
	} else {
		size_t i = 0;

		while (i < n &&
		       (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
			i++;
		json = i < n && (text[i] == '[' || text[i] == '{');
	}
	if (json) {
		rc = sd_json(text ? text : "", n, name, out, nout, err);
	} else {
		void *arg[2] = { out, nout };

		rc = with_yaml(text, n, name, err, sd_yaml_cb, arg);
	}
	if (rc) {
		scrape_groups_free(*out, *nout);
		*out = NULL;
		*nout = 0;
	}
	return rc;
}
