// SPDX-License-Identifier: Apache-2.0
/* curl_dl.c - libcurl loaded on first use; see curl_dl.h for why. */
#include "base/compat.h"
#include "base/curl_dl.h"

#include <dlfcn.h>
#include <pthread.h>

struct prof_curl_api prof_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_msg[256];

static void load(void)
{
	static const char *const libs[] = { "libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so" };
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f) { "curl_" #f, offsetof(struct prof_curl_api, f) }
		SYM(global_init),  SYM(global_cleanup), SYM(easy_init),	   SYM(easy_setopt),
		SYM(easy_perform), SYM(easy_getinfo),	SYM(easy_cleanup), SYM(easy_strerror),
		SYM(slist_append), SYM(slist_free_all),
#undef SYM
	};
	void *h = NULL;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(libs) && !h; i++)
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_msg, sizeof(load_msg), "cannot load libcurl: %s", dlerror());
		load_rc = -PROF_EUNSUPPORTED;
		return;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			snprintf(load_msg, sizeof(load_msg), "libcurl lacks %s", syms[i].name);
			load_rc = -PROF_EUNSUPPORTED;
			return;
		}
		memcpy((char *)&prof_curl + syms[i].off, &f, sizeof(f));
	}
}

int prof_curl_load(struct prof_err *err)
{
	pthread_once(&once, load);
	if (load_rc)
		return prof_err_set(err, load_rc, -1, "%s", load_msg);
	return 0;
}
