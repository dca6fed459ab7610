// SPDX-License-Identifier: Apache-2.0
/* gnutls_dl.c - GnuTLS loaded on first use; see gnutls_dl.h for why. */
#include "base/compat.h"
#include "base/gnutls_dl.h"

#include <dlfcn.h>
#include <pthread.h>

struct prof_gnutls_api prof_gnutls;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static char load_msg[256];

static void load(void)
{
	static const char *const libs[] = { "libgnutls.so.30", "libgnutls.so" };
	static const struct {
		const char *name;
		size_t off;
	} syms[] = {
#define SYM(f) { "gnutls_" #f, offsetof(struct prof_gnutls_api, f) }
		SYM(certificate_allocate_credentials),
		SYM(certificate_free_credentials),
		SYM(certificate_set_x509_key_mem),
		SYM(certificate_set_x509_trust_mem),
		SYM(certificate_server_set_request),
		SYM(certificate_verify_peers),
		SYM(priority_init),
		SYM(priority_deinit),
		SYM(priority_set),
		SYM(init),
		SYM(deinit),
		SYM(credentials_set),
		SYM(alpn_set_protocols),
		SYM(alpn_get_selected_protocol),
		SYM(transport_set_int2),
		SYM(handshake_set_timeout),
		SYM(handshake),
		SYM(record_recv),
		SYM(record_send),
		SYM(record_check_pending),
		SYM(record_get_direction),
		SYM(bye),
		SYM(strerror),
		SYM(error_is_fatal),
#undef SYM
	};
	void *h = NULL;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(libs) && !h; i++)
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_msg, sizeof(load_msg), "cannot load GnuTLS: %s", dlerror());
		load_rc = -PROF_EUNSUPPORTED;
		return;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(syms); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			snprintf(load_msg, sizeof(load_msg), "GnuTLS lacks %s", syms[i].name);
			load_rc = -PROF_EUNSUPPORTED;
			return;
		}
		memcpy((char *)&prof_gnutls + syms[i].off, &f, sizeof(f));
	}
}

int prof_gnutls_load(struct prof_err *err)
{
	pthread_once(&once, load);
	if (load_rc)
		return prof_err_set(err, load_rc, -1, "%s", load_msg);
	return 0;
}
