/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl_dl.h - libcurl, loaded on first use with dlopen.
 *
 * Why: libcurl pulls in about thirty shared libraries (TLS, LDAP, SSH,
 * Kerberos, ...). Linking it into the one profd binary made every command,
 * even `profd top FILE`, pay for the dynamic loader binding them: ~6 ms of a
 * 7 ms run (bench/results/pprof-top.md). Only the commands that talk HTTP as
 * a client (agent export, later scrape and debuginfod) load it now.
 *
 * Use: call prof_curl_load() once before any curl_* call (it is cheap and
 * thread-safe after the first time); then use the usual curl_easy_* names,
 * which this header maps onto the loaded functions. Include this header
 * instead of <curl/curl.h>.
 */
#ifndef PROF_BASE_CURL_DL_H
#define PROF_BASE_CURL_DL_H

#include "base/compat.h"
#include "base/err.h"

#include <curl/curl.h>

struct prof_curl_api {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};

extern struct prof_curl_api prof_curl;

/**
 * prof_curl_load() - dlopen libcurl (libcurl.so.4, else libcurl-gnutls.so.4)
 * and resolve the functions above. 0, or -PROF_EUNSUPPORTED with @err
 * naming the missing library or symbol. Thread-safe; later calls return
 * the first result.
 */
int prof_curl_load(struct prof_err *err);

#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init    (prof_curl.global_init)
#define curl_global_cleanup (prof_curl.global_cleanup)
#define curl_easy_init	    (prof_curl.easy_init)
#define curl_easy_setopt    (prof_curl.easy_setopt)
#define curl_easy_perform   (prof_curl.easy_perform)
#define curl_easy_getinfo   (prof_curl.easy_getinfo)
#define curl_easy_cleanup   (prof_curl.easy_cleanup)
#define curl_easy_strerror  (prof_curl.easy_strerror)
#define curl_slist_append   (prof_curl.slist_append)
#define curl_slist_free_all (prof_curl.slist_free_all)

#endif
