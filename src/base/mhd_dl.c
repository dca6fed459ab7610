// SPDX-License-Identifier: Apache-2.0
/* mhd_dl.c - libmicrohttpd loaded on first use; see mhd_dl.h for why. */
#include "base/compat.h"
#include "base/mhd_dl.h"

#include <dlfcn.h>
#include <pthread.h>

struct prof_mhd_api prof_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_msg[256];

static void load(void)
{
	static const char *const libs[] = { "libmicrohttpd.so.12", "libmicrohttpd.so" };
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f) { "MHD_" #f, offsetof(struct prof_mhd_api, f) }
		SYM(start_daemon),
		SYM(stop_daemon),
		SYM(quiesce_daemon),
		SYM(get_daemon_info),
		SYM(get_connection_info),
		SYM(lookup_connection_value),
		SYM(get_connection_values),
		SYM(create_response_from_buffer),
		SYM(create_response_from_fd64),
		SYM(add_response_header),
		SYM(queue_response),
		SYM(destroy_response),
		SYM(suspend_connection),
		SYM(resume_connection),
		SYM(is_feature_supported),
#undef SYM
	};
	void *h = NULL;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(libs) && !h; i++)
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_msg, sizeof(load_msg), "cannot load libmicrohttpd: %s", dlerror());
		load_rc = -PROF_EUNSUPPORTED;
		return;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			snprintf(load_msg, sizeof(load_msg), "libmicrohttpd lacks %s",
				 syms[i].name);
			load_rc = -PROF_EUNSUPPORTED;
			return;
		}
		memcpy((char *)&prof_mhd + syms[i].off, &f, sizeof(f));
	}
}

int prof_mhd_load(struct prof_err *err)
{
	pthread_once(&once, load);
	if (load_rc)
		return prof_err_set(err, load_rc, -1, "%s", load_msg);
	return 0;
}
