/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gnutls_dl.h - GnuTLS, loaded on first use with dlopen.
 *
 * Why: the server's TLS (server/tls.h) uses GnuTLS because libmicrohttpd,
 * which serves its HTTP listeners, is built with it on Debian: one TLS
 * library reads the certificate and key of every listener, and gRPC's
 * TLS costs no library the process does not already map. Linked into
 * the one profd binary it would make every command pay for GnuTLS's
 * constructor and its crypto libraries at start (mhd_dl.h says how much);
 * loaded here it costs only `profd server --tls-cert`, and after
 * prof_mhd_load the dlopen finds the copy libmicrohttpd already brought.
 *
 * Use: call prof_gnutls_load() before any gnutls_* call (cheap and
 * thread-safe after the first time); then use the usual gnutls_* names,
 * which this header maps onto the loaded functions. Include this header
 * instead of <gnutls/gnutls.h>; types and constants come from it as usual.
 */
#ifndef PROF_BASE_GNUTLS_DL_H
#define PROF_BASE_GNUTLS_DL_H

#include "base/compat.h"
#include "base/err.h"

#include <gnutls/gnutls.h>

struct prof_gnutls_api {
	int (*certificate_allocate_credentials)(gnutls_certificate_credentials_t *res);
	void (*certificate_free_credentials)(gnutls_certificate_credentials_t sc);
	int (*certificate_set_x509_key_mem)(gnutls_certificate_credentials_t res,
					    const gnutls_datum_t *cert, const gnutls_datum_t *key,
					    gnutls_x509_crt_fmt_t type);
	int (*certificate_set_x509_trust_mem)(gnutls_certificate_credentials_t res,
					      const gnutls_datum_t *ca, gnutls_x509_crt_fmt_t type);
	void (*certificate_server_set_request)(gnutls_session_t s, gnutls_certificate_request_t r);
	int (*certificate_verify_peers)(gnutls_session_t s, gnutls_typed_vdata_st *data,
					unsigned int elements, unsigned int *status);
	int (*priority_init)(gnutls_priority_t *p, const char *priorities, const char **err_pos);
	void (*priority_deinit)(gnutls_priority_t p);
	int (*priority_set)(gnutls_session_t s, gnutls_priority_t p);
	int (*init)(gnutls_session_t *s, unsigned int flags);
	void (*deinit)(gnutls_session_t s);
	int (*credentials_set)(gnutls_session_t s, gnutls_credentials_type_t type, void *cred);
	int (*alpn_set_protocols)(gnutls_session_t s, const gnutls_datum_t *protocols,
				  unsigned protocols_size, unsigned flags);
	int (*alpn_get_selected_protocol)(gnutls_session_t s, gnutls_datum_t *protocol);
	void (*transport_set_int2)(gnutls_session_t s, int r, int w);
	void (*handshake_set_timeout)(gnutls_session_t s, unsigned int ms);
	int (*handshake)(gnutls_session_t s);
	ssize_t (*record_recv)(gnutls_session_t s, void *data, size_t size);
	ssize_t (*record_send)(gnutls_session_t s, const void *data, size_t size);
	size_t (*record_check_pending)(gnutls_session_t s);
	int (*record_get_direction)(gnutls_session_t s);
	int (*bye)(gnutls_session_t s, gnutls_close_request_t how);
	const char *(*strerror)(int error);
	int (*error_is_fatal)(int error);
};

extern struct prof_gnutls_api prof_gnutls;

/**
 * prof_gnutls_load() - dlopen GnuTLS (libgnutls.so.30) and resolve the
 * functions above. 0, or -PROF_EUNSUPPORTED with @err naming the missing
 * library or symbol. Thread-safe; later calls return the first result.
 */
int prof_gnutls_load(struct prof_err *err);

#define gnutls_certificate_allocate_credentials (prof_gnutls.certificate_allocate_credentials)
#define gnutls_certificate_free_credentials	(prof_gnutls.certificate_free_credentials)
#define gnutls_certificate_set_x509_key_mem	(prof_gnutls.certificate_set_x509_key_mem)
#define gnutls_certificate_set_x509_trust_mem	(prof_gnutls.certificate_set_x509_trust_mem)
#define gnutls_certificate_server_set_request	(prof_gnutls.certificate_server_set_request)
#define gnutls_certificate_verify_peers		(prof_gnutls.certificate_verify_peers)
#define gnutls_priority_init			(prof_gnutls.priority_init)
#define gnutls_priority_deinit			(prof_gnutls.priority_deinit)
#define gnutls_priority_set			(prof_gnutls.priority_set)
#define gnutls_init				(prof_gnutls.init)
#define gnutls_deinit				(prof_gnutls.deinit)
#define gnutls_credentials_set			(prof_gnutls.credentials_set)
#define gnutls_alpn_set_protocols		(prof_gnutls.alpn_set_protocols)
#define gnutls_alpn_get_selected_protocol	(prof_gnutls.alpn_get_selected_protocol)
#define gnutls_transport_set_int2		(prof_gnutls.transport_set_int2)
#define gnutls_handshake_set_timeout		(prof_gnutls.handshake_set_timeout)
#define gnutls_handshake			(prof_gnutls.handshake)
#define gnutls_record_recv			(prof_gnutls.record_recv)
#define gnutls_record_send			(prof_gnutls.record_send)
#define gnutls_record_check_pending		(prof_gnutls.record_check_pending)
#define gnutls_record_get_direction		(prof_gnutls.record_get_direction)
#define gnutls_bye				(prof_gnutls.bye)
#define gnutls_strerror				(prof_gnutls.strerror)
#define gnutls_error_is_fatal			(prof_gnutls.error_is_fatal)

#endif
