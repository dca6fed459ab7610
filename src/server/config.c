// SPDX-License-Identifier: Apache-2.0
/*
 * config.c - the server configuration file, YAML through libyaml's
 * document API; see config.h for the schema.
 *
 * The document is loaded whole (the file is capped at 1 MiB) and walked
 * along the schema only, so the walk's depth is fixed whatever the file
 * holds (aliases cannot make it recurse). Each error names the file, the
 * line of the offending node and the key path. The walk's helpers are
 * base/yaml.h's, shared with the scrape configuration.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/yaml.h"
#include "server/config.h"

#define CONF_MAX_FILE (1u << 20)

bool server_dataset_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SERVER_DATASET_NAME_MAX)
		return false;
	/* <data>/debuginfo/ holds the debuginfo store, beside the datasets. */
	if (!strcmp(s, "debuginfo"))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int parse_rule(struct ywalk *w, yaml_node_t *n, struct server_rule *r, const char *ds)
{
	char what[128];
	bool have_action = false, have_fraction = false, have_value = false;
	int rc;

	snprintf(what, sizeof(what), "datasets[%s].rules", ds);
	if ((rc = ywalk_want_type(w, n, YAML_MAPPING_NODE, what)))
		return rc;
	r->line = (unsigned)n->start_mark.line + 1;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(w, pair->key);
		yaml_node_t *v = ywalk_node(w, pair->value);
		const char *key = ywalk_scalar(k), *s;

		if (!key)
			return ywalk_err(w, k, what, "expected a key");
		if (!strcmp(key, "action")) {
			if ((rc = ywalk_want_scalar(w, v, "rules.action", &s)))
				return rc;
			if (!strcmp(s, "drop"))
				r->action = SERVER_RULE_DROP;
			else if (!strcmp(s, "keep"))
				r->action = SERVER_RULE_KEEP;
			else if (!strcmp(s, "drop_below"))
				r->action = SERVER_RULE_DROP_BELOW;
			else
				return ywalk_err(w, v, "rules.action",
						 "expected drop, keep or drop_below, got '%s'", s);
			have_action = true;
		} else if (!strcmp(key, "type")) {
			if ((rc = ywalk_want_scalar(w, v, "rules.type", &s)))
				return rc;
			free(r->type);
			r->type = xstrdup(s);
		} else if (!strcmp(key, "selector")) {
			struct prof_err perr;

			if ((rc = ywalk_want_scalar(w, v, "rules.selector", &s)))
				return rc;
			prof_err_init(&perr);
			query_selector_release(&r->sel);
			if (query_selector_parse(s, &r->sel, &perr))
				return ywalk_err(w, v, "rules.selector", "%s", perr.msg);
			if (r->sel.type)
				return ywalk_err(w, v, "rules.selector",
						 "put the profile type in 'type:', not in the "
						 "selector");
			free(r->selector);
			r->selector = xstrdup(s);
		} else if (!strcmp(key, "fraction")) {
			char *end;

			if ((rc = ywalk_want_scalar(w, v, "rules.fraction", &s)))
				return rc;
			errno = 0;
			r->fraction = strtod(s, &end);
			if (errno || end == s || *end || !(r->fraction >= 0 && r->fraction <= 1))
				return ywalk_err(w, v, "rules.fraction",
						 "expected a number 0..1, got '%s'", s);
			have_fraction = true;
		} else if (!strcmp(key, "value")) {
			if ((rc = ywalk_want_scalar(w, v, "rules.value", &s)))
				return rc;
			if (parse_i64(s, &r->min_value))
				return ywalk_err(w, v, "rules.value",
						 "expected an integer, got '%s'", s);
			have_value = true;
		} else {
			return ywalk_err(w, k, what,
					 "unknown key '%s' (known: action, type, selector, "
					 "fraction, value)",
					 key);
		}
	}
	if (!have_action)
		return ywalk_err(w, n, what, "missing 'action' (drop, keep or drop_below)");
	if (r->action == SERVER_RULE_KEEP && !have_fraction)
		return ywalk_err(w, n, what, "action keep needs 'fraction' (0..1)");
	if (r->action == SERVER_RULE_DROP_BELOW && !have_value)
		return ywalk_err(w, n, what, "action drop_below needs 'value'");
	if (r->action != SERVER_RULE_KEEP && have_fraction)
		return ywalk_err(w, n, what, "'fraction' belongs to action keep");
	if (r->action != SERVER_RULE_DROP_BELOW && have_value)
		return ywalk_err(w, n, what, "'value' belongs to action drop_below");
	return 0;
}

static int parse_dataset(struct ywalk *w, yaml_node_t *n, struct server_dataset_conf *d)
{
	yaml_node_t *rules = NULL;
	int rc;

	if ((rc = ywalk_want_type(w, n, YAML_MAPPING_NODE, "datasets[]")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(w, pair->key);
		yaml_node_t *v = ywalk_node(w, pair->value);
		const char *key = ywalk_scalar(k), *s;

		if (!key)
			return ywalk_err(w, k, "datasets[]", "expected a key");
		if (!strcmp(key, "name")) {
			if ((rc = ywalk_want_scalar(w, v, "datasets[].name", &s)))
				return rc;
			if (!server_dataset_name_ok(s))
				return ywalk_err(
					w, v, "datasets[].name",
					"'%s' is not a dataset name (1..64 of a-z 0-9 _ -, not 'debuginfo')",
					s);
			/* Names of other things in the data directory. */
			if (!strcmp(s, "debuginfo") || !strcmp(s, "wal"))
				return ywalk_err(w, v, "datasets[].name",
						 "'%s' is reserved (the data directory uses it)",
						 s);
			free(d->name);
			d->name = xstrdup(s);
		} else if (!strcmp(key, "retention")) {
			if ((rc = ywalk_want_scalar(w, v, "datasets[].retention", &s)))
				return rc;
			if (strcmp(s, "0") &&
			    (parse_duration_ns(s, &d->retention_ns) || d->retention_ns < 0))
				return ywalk_err(w, v, "datasets[].retention",
						 "expected a duration such as 30d or 12h, got '%s'",
						 s);
		} else if (!strcmp(key, "head_max_bytes")) {
			size_t b;

			if ((rc = ywalk_want_size(w, v, "datasets[].head_max_bytes", &b)))
				return rc;
			if (b < ((size_t)1 << 20))
				return ywalk_err(w, v, "datasets[].head_max_bytes",
						 "at least 1MiB, got %zu bytes", b);
			d->head_max_bytes = b;
		} else if (!strcmp(key, "block_duration")) {
			if ((rc = ywalk_want_scalar(w, v, "datasets[].block_duration", &s)))
				return rc;
			if (parse_duration_ns(s, &d->block_duration_ns) ||
			    d->block_duration_ns < 60 * 1000000000LL ||
			    d->block_duration_ns > 7 * 86400 * 1000000000LL)
				return ywalk_err(w, v, "datasets[].block_duration",
						 "expected a duration from 1m to 7d such as 1h or "
						 "30m, got '%s'",
						 s);
		} else if (!strcmp(key, "rules")) {
			rules = v;
		} else {
			return ywalk_err(
				w, k, "datasets[]",
				"unknown key '%s' (known: name, retention, head_max_bytes, "
				"block_duration, rules)",
				key);
		}
	}
	if (!d->name)
		return ywalk_err(w, n, "datasets[]", "missing 'name'");
	if (rules) {
		if ((rc = ywalk_want_type(w, rules, YAML_SEQUENCE_NODE, "rules")))
			return rc;
		size_t nr =
			(size_t)(rules->data.sequence.items.top - rules->data.sequence.items.start);
		d->rules = xcalloc(nr ? nr : 1, sizeof(*d->rules));
		YWALK_SEQ_FOREACH(rules, it)
		{
			struct server_rule *r = &d->rules[d->nrules++];

			if ((rc = parse_rule(w, ywalk_node(w, *it), r, d->name)))
				return rc;
		}
	}
	return 0;
}

static int read_secret_file(struct ywalk *w, yaml_node_t *v, const char *file, char **out)
{
	struct buf b;
	int rc;

	buf_init(&b, 4096);
	rc = buf_read_file(&b, file);
	if (rc) {
		buf_release(&b);
		return ywalk_err(w, v, "tokens[].secret_file", "cannot read %s: %s", file,
				 prof_strerror(rc));
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r'))
		b.p[--b.len] = '\0';
	*out = xstrdup(b.len ? b.p : "");
	memset(b.p ? b.p : (char *)"", 0, b.len);
	buf_release(&b);
	return 0;
}

static int parse_token(struct ywalk *w, yaml_node_t *n, struct server_token_conf *t)
{
	yaml_node_t *perms = NULL, *ds = NULL;
	int nsecret = 0, rc;

	if ((rc = ywalk_want_type(w, n, YAML_MAPPING_NODE, "tokens[]")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(w, pair->key);
		yaml_node_t *v = ywalk_node(w, pair->value);
		const char *key = ywalk_scalar(k), *s;

		if (!key)
			return ywalk_err(w, k, "tokens[]", "expected a key");
		if (!strcmp(key, "name")) {
			if ((rc = ywalk_want_scalar(w, v, "tokens[].name", &s)))
				return rc;
			free(t->name);
			t->name = xstrdup(s);
		} else if (!strcmp(key, "secret") || !strcmp(key, "secret_env") ||
			   !strcmp(key, "secret_file")) {
			if ((rc = ywalk_want_scalar(w, v, "tokens[].secret", &s)))
				return rc;
			nsecret++;
			if (t->secret) {
				memset(t->secret, 0, strlen(t->secret));
				free(t->secret);
				t->secret = NULL;
			}
			if (!strcmp(key, "secret")) {
				t->secret = xstrdup(s);
			} else if (!strcmp(key, "secret_env")) {
				const char *e = getenv(s);

				if (!e)
					return ywalk_err(w, v, "tokens[].secret_env",
							 "environment variable %s is not set", s);
				t->secret = xstrdup(e);
			} else if ((rc = read_secret_file(w, v, s, &t->secret))) {
				return rc;
			}
		} else if (!strcmp(key, "permissions")) {
			perms = v;
		} else if (!strcmp(key, "datasets")) {
			ds = v;
		} else if (!strcmp(key, "default_dataset")) {
			if ((rc = ywalk_want_scalar(w, v, "tokens[].default_dataset", &s)))
				return rc;
			free(t->default_dataset);
			t->default_dataset = xstrdup(s);
		} else {
			return ywalk_err(w, k, "tokens[]",
					 "unknown key '%s' (known: name, secret, secret_env, "
					 "secret_file, permissions, datasets, default_dataset)",
					 key);
		}
	}
	if (!t->name)
		return ywalk_err(w, n, "tokens[]", "missing 'name'");
	if (nsecret != 1)
		return ywalk_err(w, n, "tokens[]",
				 "token '%s': give exactly one of secret, secret_env, secret_file",
				 t->name);
	t->secret_len = strlen(t->secret);
	if (t->secret_len == 0)
		return ywalk_err(w, n, "tokens[]", "token '%s': the secret is empty", t->name);
	for (size_t i = 0; i < t->secret_len; i++)
		if ((unsigned char)t->secret[i] <= ' ' || t->secret[i] == 0x7f)
			return ywalk_err(w, n, "tokens[]",
					 "token '%s': the secret may not contain spaces or control "
					 "characters",
					 t->name);
	if (t->secret_len < 16)
		log_warn("config: token '%s' has a secret of %zu bytes; use 16 or more", t->name,
			 t->secret_len);
	if (!perms)
		return ywalk_err(w, n, "tokens[]", "token '%s': missing 'permissions'", t->name);
	if ((rc = ywalk_want_type(w, perms, YAML_SEQUENCE_NODE, "tokens[].permissions")))
		return rc;
	YWALK_SEQ_FOREACH(perms, it)
	{
		yaml_node_t *v = ywalk_node(w, *it);
		const char *s;

		if ((rc = ywalk_want_scalar(w, v, "tokens[].permissions", &s)))
			return rc;
		if (!strcmp(s, "ingest"))
			t->perms |= SERVER_PERM_INGEST;
		else if (!strcmp(s, "query"))
			t->perms |= SERVER_PERM_QUERY;
		else if (!strcmp(s, "metrics"))
			t->perms |= SERVER_PERM_METRICS;
		else
			return ywalk_err(w, v, "tokens[].permissions",
					 "unknown permission '%s' (ingest, query or metrics)", s);
	}
	if (!t->perms)
		return ywalk_err(w, perms, "tokens[].permissions", "token '%s': none given",
				 t->name);
	if (!ds)
		return ywalk_err(w, n, "tokens[]", "token '%s': missing 'datasets'", t->name);
	if ((rc = ywalk_want_type(w, ds, YAML_SEQUENCE_NODE, "tokens[].datasets")))
		return rc;
	size_t nd = (size_t)(ds->data.sequence.items.top - ds->data.sequence.items.start);
	if (!nd)
		return ywalk_err(w, ds, "tokens[].datasets", "token '%s': none given", t->name);
	t->datasets = xcalloc(nd, sizeof(*t->datasets));
	YWALK_SEQ_FOREACH(ds, it)
	{
		yaml_node_t *v = ywalk_node(w, *it);
		const char *s;

		if ((rc = ywalk_want_scalar(w, v, "tokens[].datasets", &s)))
			return rc;
		t->datasets[t->ndatasets++] = xstrdup(s);
	}
	return 0;
}

static int parse_limits(struct ywalk *w, yaml_node_t *n, struct server_limits *l)
{
	int rc;

	if ((rc = ywalk_want_type(w, n, YAML_MAPPING_NODE, "limits")))
		return rc;
	YWALK_MAP_FOREACH(n, pair)
	{
		yaml_node_t *k = ywalk_node(w, pair->key);
		yaml_node_t *v = ywalk_node(w, pair->value);
		const char *key = ywalk_scalar(k), *s;
		uint64_t u;

		if (!key)
			return ywalk_err(w, k, "limits", "expected a key");
		if (!strcmp(key, "max_body"))
			rc = ywalk_want_size(w, v, "limits.max_body", &l->max_body);
		else if (!strcmp(key, "max_decompressed"))
			rc = ywalk_want_size(w, v, "limits.max_decompressed", &l->max_decompressed);
		else if (!strcmp(key, "max_ratio")) {
			rc = ywalk_want_u64(w, v, "limits.max_ratio", 1000000, &u);
			l->max_ratio = (uint32_t)u;
		} else if (!strcmp(key, "max_samples")) {
			rc = ywalk_want_u64(w, v, "limits.max_samples", (uint64_t)1 << 32, &u);
			l->max_samples = (size_t)u;
		} else if (!strcmp(key, "max_series")) {
			rc = ywalk_want_u64(w, v, "limits.max_series", (uint64_t)1 << 24, &u);
			l->max_series = (size_t)u;
		} else if (!strcmp(key, "max_active_series")) {
			rc = ywalk_want_u64(w, v, "limits.max_active_series", (uint64_t)1 << 28,
					    &u);
			l->max_active_series = (size_t)u;
		} else if (!strcmp(key, "max_labels")) {
			rc = ywalk_want_u64(w, v, "limits.max_labels", 4096, &u);
			l->max_labels = (size_t)u;
		} else if (!strcmp(key, "max_sample_labels")) {
			rc = ywalk_want_u64(w, v, "limits.max_sample_labels", (uint64_t)1 << 32,
					    &u);
			l->max_sample_labels = (size_t)u;
		} else if (!strcmp(key, "max_label_name")) {
			rc = ywalk_want_u64(w, v, "limits.max_label_name", 65536, &u);
			l->max_label_name = (size_t)u;
		} else if (!strcmp(key, "max_label_value")) {
			rc = ywalk_want_u64(w, v, "limits.max_label_value", 1 << 20, &u);
			l->max_label_value = (size_t)u;
		} else if (!strcmp(key, "max_inflight")) {
			rc = ywalk_want_u64(w, v, "limits.max_inflight", 100000, &u);
			l->max_inflight = (unsigned)u;
		} else if (!strcmp(key, "retry_after")) {
			int64_t ns;

			if (!(rc = ywalk_want_scalar(w, v, "limits.retry_after", &s)) &&
			    (parse_duration_ns(s, &ns) || ns < 1000000000LL ||
			     ns > 3600 * 1000000000LL))
				rc = ywalk_err(w, v, "limits.retry_after",
					       "expected a duration 1s..1h, got '%s'", s);
			if (!rc)
				l->retry_after_s = (uint32_t)(ns / 1000000000LL);
		} else
			rc = ywalk_err(
				w, k, "limits",
				"unknown key '%s' (known: max_body, max_decompressed, "
				"max_ratio, max_samples, max_series, max_active_series, "
				"max_labels, max_sample_labels, "
				"max_label_name, max_label_value, max_inflight, retry_after)",
				key);
		if (rc)
			return rc;
	}
	return 0;
}

static int check_conf(struct ywalk *w, struct server_conf *c)
{
	for (size_t i = 0; i < c->ndatasets; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->datasets[i].name, c->datasets[j].name))
				return ywalk_err(w, NULL, "datasets",
						 "dataset '%s' is listed twice",
						 c->datasets[i].name);
	for (size_t i = 0; i < c->ntokens; i++) {
		struct server_token_conf *t = &c->tokens[i];

		for (size_t j = 0; j < i; j++) {
			if (!strcmp(t->name, c->tokens[j].name))
				return ywalk_err(w, NULL, "tokens", "token name '%s' is used twice",
						 t->name);
			if (t->secret_len == c->tokens[j].secret_len &&
			    !memcmp(t->secret, c->tokens[j].secret, t->secret_len))
				return ywalk_err(w, NULL, "tokens",
						 "tokens '%s' and '%s' have the same secret",
						 c->tokens[j].name, t->name);
		}
		for (size_t k = 0; k < t->ndatasets; k++)
			if (strcmp(t->datasets[k], "*") && !server_conf_dataset(c, t->datasets[k]))
				return ywalk_err(w, NULL, "tokens",
						 "token '%s' names dataset '%s', which is not in "
						 "datasets",
						 t->name, t->datasets[k]);
		if (t->default_dataset) {
			bool listed = false;

			for (size_t k = 0; k < t->ndatasets; k++)
				listed |= !strcmp(t->datasets[k], "*") ||
					  !strcmp(t->datasets[k], t->default_dataset);
			if (!listed || !server_conf_dataset(c, t->default_dataset))
				return ywalk_err(w, NULL, "tokens",
						 "token '%s': default_dataset '%s' is not one of "
						 "its datasets",
						 t->name, t->default_dataset);
		}
	}
	if (c->default_dataset && !server_conf_dataset(c, c->default_dataset))
		return ywalk_err(w, NULL, "default_dataset", "'%s' is not in datasets",
				 c->default_dataset);
	if (!c->default_dataset)
		c->default_dataset = xstrdup(server_conf_dataset(c, SERVER_DATASET_DEFAULT)
						     ? SERVER_DATASET_DEFAULT
						     : c->datasets[0].name);
	return 0;
}

static int parse_root(struct ywalk *w, yaml_node_t *root, struct server_conf *c)
{
	yaml_node_t *datasets = NULL, *tokens = NULL;
	int rc;

	if (!root)
		return ywalk_err(w, NULL, "file", "the file is empty");
	if ((rc = ywalk_want_type(w, root, YAML_MAPPING_NODE, "top level")))
		return rc;
	YWALK_MAP_FOREACH(root, pair)
	{
		yaml_node_t *k = ywalk_node(w, pair->key);
		yaml_node_t *v = ywalk_node(w, pair->value);
		const char *key = ywalk_scalar(k), *s;

		if (!key)
			return ywalk_err(w, k, "top level", "expected a key");
		if (!strcmp(key, "datasets"))
			datasets = v;
		else if (!strcmp(key, "tokens"))
			tokens = v;
		else if (!strcmp(key, "limits")) {
			if ((rc = parse_limits(w, v, &c->limits)))
				return rc;
		} else if (!strcmp(key, "default_dataset")) {
			if ((rc = ywalk_want_scalar(w, v, "default_dataset", &s)))
				return rc;
			free(c->default_dataset);
			c->default_dataset = xstrdup(s);
		} else if (!strcmp(key, "scrape_configs") || !strcmp(key, "watch_configs")) {
			/* Read by scrape/config.c (scrape_config_load, SCRAPE_CONF_EMBEDDED). */
		} else
			return ywalk_err(w, k, "top level",
					 "unknown key '%s' (known: datasets, tokens, limits, "
					 "default_dataset, scrape_configs, watch_configs)",
					 key);
	}
	if (!datasets)
		return ywalk_err(w, root, "datasets", "missing: list at least one dataset");
	if ((rc = ywalk_want_type(w, datasets, YAML_SEQUENCE_NODE, "datasets")))
		return rc;
	size_t nd =
		(size_t)(datasets->data.sequence.items.top - datasets->data.sequence.items.start);
	if (!nd)
		return ywalk_err(w, datasets, "datasets", "list at least one dataset");
	c->datasets = xcalloc(nd, sizeof(*c->datasets));
	YWALK_SEQ_FOREACH(datasets, it)
	{
		if ((rc = parse_dataset(w, ywalk_node(w, *it), &c->datasets[c->ndatasets++])))
			return rc;
	}
	if (tokens) {
		if ((rc = ywalk_want_type(w, tokens, YAML_SEQUENCE_NODE, "tokens")))
			return rc;
		size_t nt = (size_t)(tokens->data.sequence.items.top -
				     tokens->data.sequence.items.start);
		c->tokens = xcalloc(nt ? nt : 1, sizeof(*c->tokens));
		YWALK_SEQ_FOREACH(tokens, it)
		{
			if ((rc = parse_token(w, ywalk_node(w, *it), &c->tokens[c->ntokens++])))
				return rc;
		}
	}
	return check_conf(w, c);
}

int server_conf_load(const char *path, struct server_conf *c, struct prof_err *err)
{
	struct ywalk w;
	yaml_node_t *root;
	struct buf b;
	int rc;

	memset(c, 0, sizeof(*c));
	c->from_file = true;
	c->path = xstrdup(path);
	buf_init(&b, CONF_MAX_FILE);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "%s: %s%s", path, prof_strerror(rc),
				    rc == -PROF_ETOOBIG ? " (the limit is 1 MiB)" : "");
	}
	rc = ywalk_load(&w, b.p, b.len, path, err, &root);
	if (!rc)
		rc = parse_root(&w, root, c);
	ywalk_release(&w);
	/* The file may hold secrets: wipe our copy. */
	if (b.p)
		memset(b.p, 0, b.len);
	buf_release(&b);
	return rc;
}

void server_conf_default(struct server_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->datasets = xcalloc(1, sizeof(*c->datasets));
	c->datasets[0].name = xstrdup(SERVER_DATASET_DEFAULT);
	c->ndatasets = 1;
	c->default_dataset = xstrdup(SERVER_DATASET_DEFAULT);
}

void server_conf_release(struct server_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ndatasets; i++) {
		struct server_dataset_conf *d = &c->datasets[i];

		for (size_t j = 0; j < d->nrules; j++) {
			free(d->rules[j].type);
			free(d->rules[j].selector);
			query_selector_release(&d->rules[j].sel);
		}
		free(d->rules);
		free(d->name);
	}
	free(c->datasets);
	for (size_t i = 0; i < c->ntokens; i++) {
		struct server_token_conf *t = &c->tokens[i];

		if (t->secret) {
			memset(t->secret, 0, strlen(t->secret));
			free(t->secret);
		}
		free(t->name);
		for (size_t k = 0; k < t->ndatasets; k++)
			free(t->datasets[k]);
		free(t->datasets);
		free(t->default_dataset);
	}
	free(c->tokens);
	free(c->default_dataset);
	free(c->path);
	memset(c, 0, sizeof(*c));
}

void server_limits_fill_defaults(struct server_limits *l, size_t default_max_body)
{
	if (!l->max_body)
		l->max_body = default_max_body;
	if (!l->max_decompressed)
		l->max_decompressed = l->max_body;
	if (!l->max_ratio)
		l->max_ratio = SERVER_DEFAULT_MAX_RATIO;
	if (!l->max_samples)
		l->max_samples = SERVER_DEFAULT_MAX_REQ_SAMPLE;
	if (!l->max_series)
		l->max_series = SERVER_DEFAULT_MAX_SERIES;
	if (!l->max_active_series)
		l->max_active_series = SERVER_DEFAULT_MAX_ACTIVE;
	if (!l->max_labels)
		l->max_labels = SERVER_DEFAULT_MAX_LABELS;
	if (!l->max_sample_labels)
		l->max_sample_labels = SERVER_DEFAULT_SAMPLE_LABELS * l->max_samples;
	if (!l->max_label_name)
		l->max_label_name = SERVER_DEFAULT_MAX_LABEL_NAME;
	if (!l->max_label_value)
		l->max_label_value = SERVER_DEFAULT_MAX_LABEL_VAL;
	if (!l->max_inflight)
		l->max_inflight = SERVER_DEFAULT_MAX_INFLIGHT;
	if (!l->retry_after_s)
		l->retry_after_s = SERVER_DEFAULT_RETRY_AFTER_S;
}

const struct server_dataset_conf *server_conf_dataset(const struct server_conf *c, const char *name)
{
	for (size_t i = 0; i < c->ndatasets; i++)
		if (!strcmp(c->datasets[i].name, name))
			return &c->datasets[i];
	return NULL;
}
