// SPDX-License-Identifier: Apache-2.0
/* qargs.c - repeated query parameters combined per docs/api.md; see qargs.h. */
#include "base/compat.h"
#include "server/qargs.h"

enum qarg_kind { QARG_ONE, QARG_COMMA, QARG_REGEX };

static enum qarg_kind qarg_kind(const char *key)
{
	if (!strcmp(key, "group_by") || !strcmp(key, "hide"))
		return QARG_COMMA;
	if (!strcmp(key, "stack_filter") || !strcmp(key, "frame_filter"))
		return QARG_REGEX;
	return QARG_ONE;
}

/* Append @v (non-empty) to the list @a of kind @k. */
static int qarg_join(struct server_qarg *a, enum qarg_kind k, const char *v)
{
	bool first = a->joined.len == 0;

	if (k == QARG_COMMA)
		return buf_addf(&a->joined, "%s%s", first ? "" : ",", v);
	return buf_addf(&a->joined, "%s(?:%s)", first ? "" : "|", v);
}

int server_qargs_add(struct server_qargs *q, const char *key, const char *value,
		     struct prof_err *err)
{
	struct server_qarg *a = NULL;
	enum qarg_kind k = qarg_kind(key);
	const char *first;
	int rc = 0;

	for (size_t i = 0; i < q->n && !a; i++)
		if (!strcmp(q->v[i].key, key))
			a = &q->v[i];
	if (!a) {
		if (q->n == SERVER_QARGS_MAX)
			return prof_err_set(err, -EINVAL, -1, "more than %d distinct parameters",
					    SERVER_QARGS_MAX);
		a = &q->v[q->n++];
		a->key = key;
		a->value = value;
		a->count = 1;
		buf_init(&a->joined, SERVER_QARGS_MAX_JOINED);
		return 0;
	}
	if (k == QARG_ONE)
		return prof_err_set(
			err, -EINVAL, -1,
			"parameter '%.100s' given more than once (it takes one value; "
			"only group_by, hide, stack_filter and frame_filter may repeat)",
			key);
	first = a->count == 1 ? a->value : NULL;
	a->count++;
	if (first && *first)
		rc = qarg_join(a, k, first);
	if (!rc && value && *value)
		rc = qarg_join(a, k, value);
	if (rc)
		return prof_err_set(err, rc, -1, "parameter '%.100s': the values are too long",
				    key);
	a->value = a->joined.p ? a->joined.p : "";
	return 0;
}

const char *server_qargs_get(const struct server_qargs *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->v[i].key, key))
			return q->v[i].value;
	return NULL;
}

void server_qargs_release(struct server_qargs *q)
{
	for (size_t i = 0; i < q->n; i++)
		buf_release(&q->v[i].joined);
	q->n = 0;
}
