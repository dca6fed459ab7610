// SPDX-License-Identifier: Apache-2.0
/* yaml.c - the schema walk shared by the configuration readers; see yaml.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/yaml.h"

int ywalk_load(struct ywalk *w, const char *text, size_t n, const char *name, struct prof_err *err,
	       yaml_node_t **root)
{
	yaml_parser_t parser;
	int rc = 0;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->err = err;
	*root = NULL;
	if (!yaml_parser_initialize(&parser))
		return prof_err_set(err, -ENOMEM, -1, "%s: cannot start the YAML parser", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)(text ? text : ""), n);
	if (!yaml_parser_load(&parser, &w->doc)) {
		rc = prof_err_set(err, -EINVAL, -1, "%s:%lu:%lu: YAML: %s %s", name,
				  (unsigned long)parser.problem_mark.line + 1,
				  (unsigned long)parser.problem_mark.column + 1,
				  parser.problem ? parser.problem : "syntax error",
				  parser.context ? parser.context : "");
	} else {
		/* The document owns its nodes; the parser is not needed to walk it. */
		w->loaded = true;
		*root = yaml_document_get_root_node(&w->doc);
	}
	yaml_parser_delete(&parser);
	return rc;
}

void ywalk_release(struct ywalk *w)
{
	if (w->loaded)
		yaml_document_delete(&w->doc);
	w->loaded = false;
}

int ywalk_err(struct ywalk *w, const yaml_node_t *n, const char *what, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(w->err, -EINVAL, -1, "%s:%lu: %s: %s", w->name,
			    n ? (unsigned long)n->start_mark.line + 1 : 0UL, what, msg);
}

yaml_node_t *ywalk_node(struct ywalk *w, int id)
{
	return yaml_document_get_node(&w->doc, id);
}

const char *ywalk_scalar(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE)
		return NULL;
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return NULL;
	return (const char *)n->data.scalar.value;
}

int ywalk_want_scalar(struct ywalk *w, const yaml_node_t *n, const char *what, const char **out)
{
	*out = ywalk_scalar(n);
	if (!*out)
		return ywalk_err(w, n, what, "expected a single value (text without NUL bytes)");
	return 0;
}

int ywalk_want_type(struct ywalk *w, const yaml_node_t *n, yaml_node_type_t t, const char *what)
{
	if (!n || n->type != t)
		return ywalk_err(w, n, what, "expected %s",
				 t == YAML_MAPPING_NODE ? "a mapping (key: value lines)"
							: "a list");
	return 0;
}

int ywalk_want_u64(struct ywalk *w, const yaml_node_t *n, const char *what, uint64_t max,
		   uint64_t *out)
{
	const char *s;
	int rc = ywalk_want_scalar(w, n, what, &s);

	if (rc)
		return rc;
	if (parse_u64(s, out) || *out > max)
		return ywalk_err(w, n, what, "expected an integer 0..%" PRIu64 ", got '%.60s'", max,
				 s);
	return 0;
}

int ywalk_want_size(struct ywalk *w, const yaml_node_t *n, const char *what, size_t *out)
{
	const char *s;
	uint64_t v;
	int rc = ywalk_want_scalar(w, n, what, &s);

	if (rc)
		return rc;
	if (parse_size_bytes(s, &v) || v == 0 || v > ((uint64_t)1 << 34))
		return ywalk_err(
			w, n, what,
			"expected a size such as 64MiB or 1048576 (1 byte .. 16 GiB), got '%.60s'",
			s);
	*out = (size_t)v;
	return 0;
}

int ywalk_want_duration(struct ywalk *w, const yaml_node_t *n, const char *what, int64_t *out)
{
	const char *s;
	int rc = ywalk_want_scalar(w, n, what, &s);

	if (rc)
		return rc;
	if (parse_duration_ns(s, out) || *out <= 0 || *out > 7 * 86400 * 1000000000LL)
		return ywalk_err(w, n, what,
				 "expected a duration such as 10s, 500ms or 1m (up to 7 days), got "
				 "'%.60s'",
				 s);
	return 0;
}

int ywalk_want_bool(struct ywalk *w, const yaml_node_t *n, const char *what, bool *out)
{
	const char *s;
	int rc = ywalk_want_scalar(w, n, what, &s);

	if (rc)
		return rc;
	if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off"))
		*out = false;
	else
		return ywalk_err(w, n, what, "expected true or false, got '%.60s'", s);
	return 0;
}

int ywalk_want_strings(struct ywalk *w, const yaml_node_t *n, const char *what, size_t max,
		       char ***out, size_t *nout)
{
	const char *s;
	size_t cnt;
	int rc;

	*out = NULL;
	*nout = 0;
	if (n && n->type == YAML_SCALAR_NODE) {
		if ((rc = ywalk_want_scalar(w, n, what, &s)))
			return rc;
		*out = xcalloc(1, sizeof(char *));
		(*out)[0] = xstrdup(s);
		*nout = 1;
		return 0;
	}
	if ((rc = ywalk_want_type(w, n, YAML_SEQUENCE_NODE, what)))
		return rc;
	cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (cnt > max)
		return ywalk_err(w, n, what, "more than %zu entries", max);
	*out = xcalloc(cnt ? cnt : 1, sizeof(char *));
	YWALK_SEQ_FOREACH(n, it)
	{
		if ((rc = ywalk_want_scalar(w, ywalk_node(w, *it), what, &s)))
			return rc;
		(*out)[(*nout)++] = xstrdup(s);
	}
	return 0;
}

void ywalk_strings_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
