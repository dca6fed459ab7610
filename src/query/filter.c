// SPDX-License-Identifier: Apache-2.0
/* filter.c - stack/frame filters and runtime presets over PCRE2; see filter.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/filter.h"
#include "store/matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Name and module (mapping file basename) regexes of the presets. */
static const struct {
	const char *name;
	unsigned bit;
	const char *re, *module_re; /* module_re may be NULL */
} presets[] = {
	{ "go", QUERY_HIDE_GO, "^(runtime|runtime/internal/[a-z0-9]+|internal/[a-z0-9/]+)\\.",
	  NULL },
	{ "jvm", QUERY_HIDE_JVM,
	  "^(java|javax|jdk|sun|com\\.sun)[./]|^\\[?libjvm\\.so|^(JavaCalls::|JavaThread::|"
	  "Interpreter$|call_stub$|thread_native_entry|JavaMain$|thread_entry\\b)",
	  "^libjvm\\.so" },
	{ "libc", QUERY_HIDE_LIBC,
	  "^(__libc_start_main|__libc_start_call_main|_start|start_thread|__?clone3?|"
	  "_dl_[A-Za-z0-9_]+)$|^\\[?(libc|ld-linux[A-Za-z0-9_.-]*|libpthread)\\.so",
	  "^(libc|libpthread|libdl|libm|librt|ld-linux[A-Za-z0-9_-]*|ld)([.-][0-9.]+)?\\.so" },
	{ "kernel", QUERY_HIDE_KERNEL,
	  "_\\[k\\]$|^(entry_SYSCALL[A-Za-z0-9_]*|do_syscall_64|__x64_sys_[A-Za-z0-9_]+|"
	  "__arm64_sys_[A-Za-z0-9_]+|el0t_64_sync[A-Za-z0-9_]*)$",
	  "^(\\[kernel\\.kallsyms\\]|vmlinux)" },
};

int query_regex_compile(const char *param, const char *pattern, void **re, void **md,
			struct prof_err *err)
{
	int ecode;
	PCRE2_SIZE eoff;
	pcre2_code *c;

	*re = *md = NULL;
	c = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
			  PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ecode, &eoff, NULL);
	if (!c) {
		PCRE2_UCHAR msg[256];

		pcre2_get_error_message(ecode, msg, sizeof(msg));
		return prof_err_set(err, -EINVAL, (int64_t)eoff,
				    "parameter '%s': regex error: %s at offset %zu of '%s'", param,
				    (const char *)msg, (size_t)eoff, pattern);
	}
	(void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* an optimisation only */
	*md = pcre2_match_data_create_from_pattern(c, NULL);
	if (!*md) {
		pcre2_code_free(c);
		return prof_err_set(err, -ENOMEM, -1, "parameter '%s': out of memory", param);
	}
	*re = c;
	return 0;
}

bool query_regex_match(void *re, void *md, const char *s, size_t n)
{
	/* A match error (bad UTF-8 that PCRE2 still refuses) counts as no
	 * match; a limit hit fails the query (store_regex_match). */
	return store_regex_match(re, md, s, n);
}

void query_regex_free(void *re, void *md)
{
	pcre2_match_data_free(md);
	pcre2_code_free(re);
}

int query_filter_init(struct query_filter *f, const char *stack_filter, const char *frame_filter,
		      const char *hide, struct prof_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	if (stack_filter && *stack_filter) {
		rc = query_regex_compile("stack_filter", stack_filter, &f->stack_re, &f->stack_md,
					 err);
		if (rc)
			return rc;
	}
	if (frame_filter && *frame_filter) {
		rc = query_regex_compile("frame_filter", frame_filter, &f->frame_re, &f->frame_md,
					 err);
		if (rc)
			return rc;
	}
	if (!hide || !*hide)
		return 0;

	char *alt = NULL, *malt = NULL;
	for (const char *s = hide; *s;) {
		size_t k = strcspn(s, ",");
		size_t i;

		for (i = 0; i < PROF_ARRAY_SIZE(presets); i++)
			if (strlen(presets[i].name) == k && !memcmp(presets[i].name, s, k))
				break;
		if (k && i == PROF_ARRAY_SIZE(presets)) {
			free(alt);
			free(malt);
			return prof_err_set(err, -EINVAL, s - hide,
					    "parameter 'hide': unknown preset '%.*s' (known: go, "
					    "jvm, libc, kernel)",
					    (int)PROF_MIN(k, 64), s);
		}
		if (k && !(f->hide & presets[i].bit)) {
			char *n = alt ? xasprintf("%s|(?:%s)", alt, presets[i].re)
				      : xasprintf("(?:%s)", presets[i].re);

			free(alt);
			alt = n;
			if (presets[i].module_re) {
				n = malt ? xasprintf("%s|(?:%s)", malt, presets[i].module_re)
					 : xasprintf("(?:%s)", presets[i].module_re);
				free(malt);
				malt = n;
			}
			f->hide |= presets[i].bit;
		}
		s += k;
		if (*s == ',')
			s++;
	}
	rc = alt ? query_regex_compile("hide", alt, &f->hide_re, &f->hide_md, err) : 0;
	if (!rc && malt)
		rc = query_regex_compile("hide", malt, &f->hide_mod_re, &f->hide_mod_md, err);
	free(alt);
	free(malt);
	return rc;
}

void query_filter_release(struct query_filter *f)
{
	if (!f)
		return;
	query_regex_free(f->stack_re, f->stack_md);
	query_regex_free(f->frame_re, f->frame_md);
	query_regex_free(f->hide_re, f->hide_md);
	query_regex_free(f->hide_mod_re, f->hide_mod_md);
	memset(f, 0, sizeof(*f));
}

bool query_filter_stack_match(const struct query_filter *f, const char *name, size_t n)
{
	return f && f->stack_re && query_regex_match(f->stack_re, f->stack_md, name, n);
}

bool query_filter_hides(const struct query_filter *f, const char *name, size_t n, bool kernel,
			const char *module)
{
	if (!f)
		return false;
	if (kernel && (f->hide & QUERY_HIDE_KERNEL))
		return true;
	if (f->hide_mod_re && module && *module &&
	    query_regex_match(f->hide_mod_re, f->hide_mod_md, module, strlen(module)))
		return true;
	if (f->hide_re && query_regex_match(f->hide_re, f->hide_md, name, n))
		return true;
	return f->frame_re && query_regex_match(f->frame_re, f->frame_md, name, n);
}
