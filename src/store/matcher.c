// SPDX-License-Identifier: Apache-2.0
/* matcher.c - PromQL-style label matchers over PCRE2; see matcher.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "store/matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>

const char *store_label_canonical(const char *name)
{
	return strcmp(name, STORE_LABEL_SERVICE_ALT) ? name : STORE_LABEL_SERVICE;
}

const char *store_label_alias(const char *name)
{
	return strcmp(name, STORE_LABEL_SERVICE) ? NULL : STORE_LABEL_SERVICE_ALT;
}

int store_matcher_init(struct store_matcher *m, const char *name, enum store_match_op op,
		       const char *value, struct prof_err *err)
{
	memset(m, 0, sizeof(*m));
	if (op == STORE_MATCH_RE || op == STORE_MATCH_NOT_RE) {
		int ecode;
		PCRE2_SIZE eoff;
		pcre2_code *re = pcre2_compile((PCRE2_SPTR)value, PCRE2_ZERO_TERMINATED,
					       PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF |
						       PCRE2_MATCH_INVALID_UTF,
					       &ecode, &eoff, NULL);
		if (!re) {
			PCRE2_UCHAR msg[256];

			pcre2_get_error_message(ecode, msg, sizeof(msg));
			return prof_err_set(err, -EINVAL, (int64_t)eoff,
					    "regex for label %s: %s at offset %zu of the pattern",
					    name, (const char *)msg, (size_t)eoff);
		}
		/* JIT is an optimisation only; a failure (no JIT support) is fine. */
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
		m->re = re;
		m->md = pcre2_match_data_create_from_pattern(re, NULL);
		if (!m->md) {
			pcre2_code_free(re);
			m->re = NULL;
			return prof_err_set(err, -ENOMEM, -1, "regex for label %s: out of memory",
					    name);
		}
	}
	m->op = op;
	m->name = xstrdup(store_label_canonical(name));
	m->value = xstrdup(value);
	return 0;
}

void store_matcher_release(struct store_matcher *m)
{
	if (!m)
		return;
	pcre2_match_data_free(m->md);
	pcre2_code_free(m->re);
	free(m->name);
	free(m->value);
	memset(m, 0, sizeof(*m));
}

bool store_matcher_match(const struct store_matcher *m, const char *v)
{
	if (!v)
		v = "";
	switch (m->op) {
	case STORE_MATCH_EQ:
		return strcmp(v, m->value) == 0;
	case STORE_MATCH_NE:
		return strcmp(v, m->value) != 0;
	case STORE_MATCH_RE:
	case STORE_MATCH_NOT_RE:
		return store_regex_match(m->re, m->md, v, strlen(v)) == (m->op == STORE_MATCH_RE);
	}
	return false;
}

static pthread_once_t mctx_once = PTHREAD_ONCE_INIT;
static pcre2_match_context *mctx;
static __thread unsigned limit_hits;
static __thread bool in_query;

static void mctx_init(void)
{
	mctx = pcre2_match_context_create(NULL);
	if (mctx) {
		pcre2_set_match_limit(mctx, STORE_REGEX_MATCH_LIMIT);
		pcre2_set_depth_limit(mctx, STORE_REGEX_DEPTH_LIMIT);
	}
}

bool store_regex_match(void *re, void *md, const char *s, size_t n)
{
	int rc;

	if (in_query && limit_hits)
		return false; /* the query is refused anyway */
	pthread_once(&mctx_once, mctx_init);
	rc = pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, mctx);
	if (rc >= 0)
		return true;
	if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
	    rc == PCRE2_ERROR_HEAPLIMIT)
		limit_hits++;
	return false; /* no match, or a string PCRE2 refuses (bad UTF-8) */
}

void store_regex_query_begin(void)
{
	limit_hits = 0;
	in_query = true;
}

unsigned store_regex_query_end(void)
{
	unsigned n = limit_hits;

	in_query = false;
	limit_hits = 0;
	return n;
}

const char *store_match_op_str(enum store_match_op op)
{
	switch (op) {
	case STORE_MATCH_EQ:
		return "=";
	case STORE_MATCH_NE:
		return "!=";
	case STORE_MATCH_RE:
		return "=~";
	case STORE_MATCH_NOT_RE:
		return "!~";
	}
	return "?";
}
