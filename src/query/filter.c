// SPDX-License-Identifier: Apache-2.0
/* filter.c - stack/frame filters and runtime presets over PCRE2; see filter.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/filter.h"
#include "store/matcher.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/*
 * Name and module (mapping file basename) regexes of the presets. A
 * native-only preset (an interpreter's own C code) leaves every frame
 * whose frame type says it is not native alone: the interpreted frames
 * ("cpython", "ruby", "php", "v8js", ...) keep their names whatever they
 * are (a PHP function named execute_ex, a Python one in a file named
 * python3), whatever mapping they sit on.
 */
static const struct {
	const char *name;
	unsigned bit;
	const char *re, *module_re; /* module_re may be NULL */
	bool native_only;
} presets[] = {
	{ "go", QUERY_HIDE_GO, "^(runtime|runtime/internal/[a-z0-9]+|internal/[a-z0-9/]+)\\.", NULL,
	  false },
	{ "jvm", QUERY_HIDE_JVM,
	  "^(java|javax|jdk|sun|com\\.sun)[./]|^\\[?libjvm\\.so|^(JavaCalls::|JavaThread::|"
	  "Interpreter$|call_stub$|thread_native_entry|JavaMain$|thread_entry\\b)",
	  "^libjvm\\.so", false },
	{ "libc", QUERY_HIDE_LIBC,
	  "^(__libc_start_main|__libc_start_call_main|_start|start_thread|__?clone3?|"
	  "_dl_[A-Za-z0-9_]+)$|^\\[?(libc|ld-linux[A-Za-z0-9_.-]*|libpthread)\\.so",
	  "^(libc|libpthread|libdl|libm|librt|ld-linux[A-Za-z0-9_-]*|ld)([.-][0-9.]+)?\\.so",
	  false },
	{ "kernel", QUERY_HIDE_KERNEL,
	  "_\\[k\\]$|^(entry_SYSCALL[A-Za-z0-9_]*|do_syscall_64|__x64_sys_[A-Za-z0-9_]+|"
	  "__arm64_sys_[A-Za-z0-9_]+|el0t_64_sync[A-Za-z0-9_]*)$",
	  "^(\\[kernel\\.kallsyms\\]|vmlinux)", false },
	{ "python", QUERY_HIDE_PYTHON,
	  "^(_?PyEval_[A-Za-z0-9_]+|_?PyObject_(Call|Vectorcall|FastCall|MakeTpCall)[A-Za-z0-9_]*|"
	  "_?PyFunction_[A-Za-z0-9_]+|_?PyVectorcall_[A-Za-z0-9_]+|Py_RunMain|Py_(Bytes)?Main|"
	  "pymain_[A-Za-z0-9_]+|_?PyRun_[A-Za-z0-9_]+|run_(mod|eval_code_obj|pyc_file)|"
	  "method_vectorcall[A-Za-z0-9_]*|cfunction_[A-Za-z0-9_]+|slot_tp_[A-Za-z0-9_]+|"
	  "vectorcall_[A-Za-z0-9_]+)$|^\\[?libpython[0-9.]*[a-z]*\\.so",
	  "^(libpython[0-9.]*[a-z]*\\.so|python[0-9.]*[a-z]?$)", true },
	{ "ruby", QUERY_HIDE_RUBY,
	  "^(vm_exec_core|vm_exec|rb_vm_exec|vm_call_[A-Za-z0-9_]+|vm_sendish|"
	  "rb_funcall[A-Za-z0-9_]*|rb_vm_invoke_[A-Za-z0-9_]+|invoke_block[A-Za-z0-9_]*|"
	  "invoke_iseq_block[A-Za-z0-9_]*|vm_invoke_[A-Za-z0-9_]+|vm_yield[A-Za-z0-9_]*|"
	  "rb_yield[A-Za-z0-9_]*|rb_ec_exec_node|ruby_run_node|ruby_exec_node)$|"
	  "^\\[?libruby[A-Za-z0-9_.-]*\\.so",
	  "^(libruby[A-Za-z0-9_.-]*\\.so|ruby[0-9.]*$)", true },
	{ "php", QUERY_HIDE_PHP,
	  "^(execute_ex|zend_execute[A-Za-z0-9_]*|ZEND_[A-Z0-9_]+_HANDLER|"
	  "php_execute_script[A-Za-z0-9_]*|php_cli[A-Za-z0-9_]*|zend_call_function|"
	  "zend_call_known_[A-Za-z0-9_]+|do_cli)$",
	  "^(php(-fpm|-cgi)?[0-9.]*|libphp[0-9.]*\\.so)$", true },
	{ "node", QUERY_HIDE_NODE, "^(node::|v8::|Builtins_|Builtin:|uv_run$|uv__)",
	  "^(node|nodejs|libnode\\.so[0-9.]*)$", true },
};

/* The frame types whose frames are native code (none given counts as native). */
static bool native_type(const char *frame_type)
{
	return !frame_type || !*frame_type || !strcmp(frame_type, "native");
}

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

	/* [0] every frame, [1] native frames only: name and module alternations. */
	char *alt[2] = { NULL, NULL }, *malt[2] = { NULL, NULL };
	for (const char *s = hide; *s;) {
		size_t k = strcspn(s, ",");
		size_t i;

		for (i = 0; i < PROF_ARRAY_SIZE(presets); i++)
			if (strlen(presets[i].name) == k && !memcmp(presets[i].name, s, k))
				break;
		if (k && i == PROF_ARRAY_SIZE(presets)) {
			for (int g = 0; g < 2; g++) {
				free(alt[g]);
				free(malt[g]);
			}
			return prof_err_set(err, -EINVAL, s - hide,
					    "parameter 'hide': unknown preset '%.*s' (known: go, "
					    "jvm, libc, kernel, python, ruby, php, node)",
					    (int)PROF_MIN(k, 64), s);
		}
		if (k && !(f->hide & presets[i].bit)) {
			int g = presets[i].native_only;
			char *n = alt[g] ? xasprintf("%s|(?:%s)", alt[g], presets[i].re)
					 : xasprintf("(?:%s)", presets[i].re);

			free(alt[g]);
			alt[g] = n;
			if (presets[i].module_re) {
				n = malt[g] ? xasprintf("%s|(?:%s)", malt[g], presets[i].module_re)
					    : xasprintf("(?:%s)", presets[i].module_re);
				free(malt[g]);
				malt[g] = n;
			}
			f->hide |= presets[i].bit;
		}
		s += k;
		if (*s == ',')
			s++;
	}
	void **res[2][2][2] = {
		{ { &f->hide_re, &f->hide_md }, { &f->hide_mod_re, &f->hide_mod_md } },
		{ { &f->hide_nat_re, &f->hide_nat_md },
		  { &f->hide_nat_mod_re, &f->hide_nat_mod_md } },
	};
	rc = 0;
	for (int g = 0; g < 2; g++) {
		if (!rc && alt[g])
			rc = query_regex_compile("hide", alt[g], res[g][0][0], res[g][0][1], err);
		if (!rc && malt[g])
			rc = query_regex_compile("hide", malt[g], res[g][1][0], res[g][1][1], err);
		free(alt[g]);
		free(malt[g]);
	}
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
	query_regex_free(f->hide_nat_re, f->hide_nat_md);
	query_regex_free(f->hide_nat_mod_re, f->hide_nat_mod_md);
	memset(f, 0, sizeof(*f));
}

bool query_filter_stack_match(const struct query_filter *f, const char *name, size_t n)
{
	return f && f->stack_re && query_regex_match(f->stack_re, f->stack_md, name, n);
}

bool query_filter_hides(const struct query_filter *f, const char *name, size_t n,
			const char *frame_type, const char *module)
{
	bool has_mod = module && *module;

	if (!f)
		return false;
	if ((f->hide & QUERY_HIDE_KERNEL) && frame_type && !strcmp(frame_type, "kernel"))
		return true;
	/* Node.js's own JavaScript: the agent puts it on its own mapping (collect.h). */
	if ((f->hide & QUERY_HIDE_NODE) && has_mod && !strcmp(module, "[v8js:node]"))
		return true;
	if (f->hide_mod_re && has_mod &&
	    query_regex_match(f->hide_mod_re, f->hide_mod_md, module, strlen(module)))
		return true;
	if (f->hide_re && query_regex_match(f->hide_re, f->hide_md, name, n))
		return true;
	if ((f->hide_nat_re || f->hide_nat_mod_re) && native_type(frame_type)) {
		if (f->hide_nat_mod_re && has_mod &&
		    query_regex_match(f->hide_nat_mod_re, f->hide_nat_mod_md, module,
				      strlen(module)))
			return true;
		if (f->hide_nat_re && query_regex_match(f->hide_nat_re, f->hide_nat_md, name, n))
			return true;
	}
	return f->frame_re && query_regex_match(f->frame_re, f->frame_md, name, n);
}
