/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mhd_dl.h - libmicrohttpd, loaded on first use with dlopen.
 *
 * Why: Debian's libmicrohttpd pulls in GnuTLS and its crypto libraries
 * (nettle, hogweed, gmp, p11-kit, idn2, unistring, tasn1, ffi) and GnuTLS
 * initializes itself in a constructor; linked into the one profd binary,
 * every command paid for that at start, even `profd top FILE` (about 1.5
 * of its 3.5 ms; bench/results/pprof-top.md). Only the commands that serve
 * HTTP (server, agent --metrics-listen) load it now, as curl_dl.h does for
 * libcurl.
 *
 * Use: call prof_mhd_load() before starting a daemon (cheap and thread-safe
 * after the first time); every other MHD_* call happens on a daemon's
 * connections, so after it. Include this header instead of <microhttpd.h>:
 * it maps the MHD_* functions profd uses onto the loaded ones (types,
 * enums and constants come from <microhttpd.h> as usual).
 */
#ifndef PROF_BASE_MHD_DL_H
#define PROF_BASE_MHD_DL_H

#include "base/compat.h"
#include "base/err.h"

#include <microhttpd.h>

struct prof_mhd_api {
	struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
					   MHD_AcceptPolicyCallback apc, void *apc_cls,
					   MHD_AccessHandlerCallback dh, void *dh_cls, ...);
	void (*stop_daemon)(struct MHD_Daemon *d);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *d);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *d,
						       enum MHD_DaemonInfoType t, ...);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
							       enum MHD_ConnectionInfoType t, ...);
	const char *(*lookup_connection_value)(struct MHD_Connection *c, enum MHD_ValueKind kind,
					       const char *key);
	int (*get_connection_values)(struct MHD_Connection *c, enum MHD_ValueKind kind,
				     MHD_KeyValueIterator it, void *it_cls);
	struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
							    enum MHD_ResponseMemoryMode mode);
	struct MHD_Response *(*create_response_from_fd64)(uint64_t size, int fd);
	enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header,
					       const char *content);
	enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
					  struct MHD_Response *r);
	void (*destroy_response)(struct MHD_Response *r);
	void (*suspend_connection)(struct MHD_Connection *c);
	void (*resume_connection)(struct MHD_Connection *c);
	enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE feature);
};

extern struct prof_mhd_api prof_mhd;

/**
 * prof_mhd_load() - dlopen libmicrohttpd (libmicrohttpd.so.12) and resolve
 * the functions above. 0, or -PROF_EUNSUPPORTED with @err naming the
 * missing library or symbol. Thread-safe; later calls return the first
 * result.
 */
int prof_mhd_load(struct prof_err *err);

#define MHD_start_daemon		(prof_mhd.start_daemon)
#define MHD_stop_daemon			(prof_mhd.stop_daemon)
#define MHD_quiesce_daemon		(prof_mhd.quiesce_daemon)
#define MHD_get_daemon_info		(prof_mhd.get_daemon_info)
#define MHD_get_connection_info		(prof_mhd.get_connection_info)
#define MHD_lookup_connection_value	(prof_mhd.lookup_connection_value)
#define MHD_get_connection_values	(prof_mhd.get_connection_values)
#define MHD_create_response_from_buffer (prof_mhd.create_response_from_buffer)
#define MHD_create_response_from_fd64	(prof_mhd.create_response_from_fd64)
#define MHD_add_response_header		(prof_mhd.add_response_header)
#define MHD_queue_response		(prof_mhd.queue_response)
#define MHD_destroy_response		(prof_mhd.destroy_response)
#define MHD_suspend_connection		(prof_mhd.suspend_connection)
#define MHD_resume_connection		(prof_mhd.resume_connection)
#define MHD_is_feature_supported	(prof_mhd.is_feature_supported)

#endif
