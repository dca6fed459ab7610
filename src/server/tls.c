// SPDX-License-Identifier: Apache-2.0
/*
 * tls.c - the server's TLS with GnuTLS; see tls.h.
 *
 * One certificate credential holds the key pair (and the client CA as
 * its trusted list); every gRPC session uses it and the priority cache
 * made from SERVER_TLS_PRIORITIES. libmicrohttpd builds credentials of
 * its own from the same PEM text, so the two listeners agree on what
 * they accept. Client certificates: GNUTLS_CERT_REQUIRE in the
 * handshake, then gnutls_certificate_verify_peers (chain and key
 * purpose) on the session, the same check http.c makes on
 * libmicrohttpd's sessions (which only request a certificate and leave
 * its verification to the application).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/gnutls_dl.h"
#include "base/mem.h"
#include "server/tls.h"

#include <gnutls/x509.h>
#include <sys/socket.h>

struct server_tls {
	struct buf cert, key, ca;
	gnutls_certificate_credentials_t cred;
	gnutls_priority_t prio;
	bool verify_clients;
};

struct server_tls_sess {
	gnutls_session_t s;
	bool verify_clients;
	unsigned timeout_ms;
};

static int read_pem(struct buf *b, const char *what, const char *path, struct prof_err *err)
{
	int rc;

	buf_init(b, SERVER_TLS_MAX_FILE);
	rc = buf_read_file(b, path);
	if (rc == -PROF_ETOOBIG)
		return prof_err_set(err, rc, -1, "%s '%s': larger than %zu bytes", what, path,
				    SERVER_TLS_MAX_FILE);
	if (rc)
		return prof_err_set(err, rc, -1, "%s '%s': %s", what, path, prof_strerror(rc));
	if (!b->len)
		return prof_err_set(err, -EINVAL, -1, "%s '%s': the file is empty", what, path);
	return 0;
}

static gnutls_datum_t datum(const struct buf *b)
{
	return (gnutls_datum_t){ .data = (unsigned char *)b->p, .size = (unsigned)b->len };
}

int server_tls_new(const struct server_tls_conf *c, struct server_tls **out, struct prof_err *err)
{
	struct server_tls *t;
	const char *pos = NULL;
	int rc, g;

	*out = NULL;
	if (!c->cert || !c->key)
		return prof_err_set(err, -EINVAL, -1, "TLS needs both a certificate and a key");
	rc = prof_gnutls_load(err);
	if (rc)
		return rc;
	t = xcalloc(1, sizeof(*t));
	buf_init(&t->ca, 0);
	rc = read_pem(&t->cert, "--tls-cert", c->cert, err);
	if (!rc)
		rc = read_pem(&t->key, "--tls-key", c->key, err);
	if (!rc && c->client_ca)
		rc = read_pem(&t->ca, "--tls-client-ca", c->client_ca, err);
	if (rc)
		goto fail;
	g = gnutls_certificate_allocate_credentials(&t->cred);
	if (g < 0) {
		rc = prof_err_set(err, -ENOMEM, -1, "GnuTLS: %s", gnutls_strerror(g));
		goto fail;
	}
	gnutls_datum_t cd = datum(&t->cert), kd = datum(&t->key);

	g = gnutls_certificate_set_x509_key_mem(t->cred, &cd, &kd, GNUTLS_X509_FMT_PEM);
	if (g < 0) {
		rc = prof_err_set(err, -EINVAL, -1,
				  "--tls-cert '%s' / --tls-key '%s': %s (expected PEM: the "
				  "certificate, then any intermediates; its unencrypted key)",
				  c->cert, c->key, gnutls_strerror(g));
		goto fail;
	}
	if (c->client_ca) {
		gnutls_datum_t ad = datum(&t->ca);

		g = gnutls_certificate_set_x509_trust_mem(t->cred, &ad, GNUTLS_X509_FMT_PEM);
		if (g <= 0) {
			rc = prof_err_set(err, -EINVAL, -1, "--tls-client-ca '%s': %s",
					  c->client_ca,
					  g < 0 ? gnutls_strerror(g) : "no PEM certificate in it");
			goto fail;
		}
		t->verify_clients = true;
	}
	g = gnutls_priority_init(&t->prio, SERVER_TLS_PRIORITIES, &pos);
	if (g < 0) {
		rc = prof_err_set(err, -EINVAL, -1, "GnuTLS priorities at '%s': %s",
				  pos ? pos : "?", gnutls_strerror(g));
		goto fail;
	}
	*out = t;
	return 0;
fail:
	server_tls_free(t);
	return rc;
}

void server_tls_free(struct server_tls *t)
{
	if (!t)
		return;
	if (t->prio)
		gnutls_priority_deinit(t->prio);
	if (t->cred)
		gnutls_certificate_free_credentials(t->cred);
	if (t->key.p)
		explicit_bzero(t->key.p, t->key.len);
	buf_release(&t->cert);
	buf_release(&t->key);
	buf_release(&t->ca);
	free(t);
}

const char *server_tls_cert_pem(const struct server_tls *t)
{
	return t->cert.p;
}

const char *server_tls_key_pem(const struct server_tls *t)
{
	return t->key.p;
}

const char *server_tls_client_ca_pem(const struct server_tls *t)
{
	return t->verify_clients ? t->ca.p : NULL;
}

int server_tls_check_peer(void *session, char *why, size_t whysz)
{
	/* Chain, signatures, validity, and a purpose for TLS clients: a
	 * certificate whose extended key usage lists others (a server's
	 * certificate the same CA signed) is not a client's. */
	gnutls_typed_vdata_st vd = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
				     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
	unsigned status = 0;
	int g = gnutls_certificate_verify_peers((gnutls_session_t)session, &vd, 1, &status);
	const char *r = NULL;

	if (g == GNUTLS_E_NO_CERTIFICATE_FOUND)
		r = "no client certificate was sent";
	else if (g < 0)
		r = gnutls_strerror(g);
	else if (status & (GNUTLS_CERT_SIGNER_NOT_FOUND | GNUTLS_CERT_SIGNER_NOT_CA))
		r = "the client certificate is not signed by the --tls-client-ca authority";
	else if (status & GNUTLS_CERT_EXPIRED)
		r = "the client certificate has expired";
	else if (status & GNUTLS_CERT_NOT_ACTIVATED)
		r = "the client certificate is not valid yet";
	else if (status & GNUTLS_CERT_PURPOSE_MISMATCH)
		r = "the client certificate's extended key usage does not include TLS clients";
	else if (status & GNUTLS_CERT_REVOKED)
		r = "the client certificate is revoked";
	else if (status)
		r = "the client certificate does not verify";
	if (!r)
		return 0;
	snprintf(why, whysz, "%s", r);
	return -EACCES;
}

int server_tls_start(const struct server_tls *t, int fd, unsigned timeout_ms,
		     struct server_tls_sess **out, struct prof_err *err)
{
	static const gnutls_datum_t h2 = { .data = (unsigned char *)"h2", .size = 2 };
	struct server_tls_sess *s = xcalloc(1, sizeof(*s));
	int g;

	*out = NULL;
	/* GNUTLS_NONBLOCK: with a handshake timeout GnuTLS would otherwise
	 * wait in poll(2) for the rest of a record, holding up the event loop
	 * (and every other connection's handshake) for that long. */
	g = gnutls_init(&s->s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL | GNUTLS_NONBLOCK);
	if (g < 0) {
		free(s);
		return prof_err_set(err, -ENOMEM, -1, "GnuTLS: %s", gnutls_strerror(g));
	}
	if ((g = gnutls_priority_set(s->s, t->prio)) < 0 ||
	    (g = gnutls_credentials_set(s->s, GNUTLS_CRD_CERTIFICATE, t->cred)) < 0 ||
	    (g = gnutls_alpn_set_protocols(s->s, &h2, 1, GNUTLS_ALPN_MANDATORY)) < 0) {
		gnutls_deinit(s->s);
		free(s);
		return prof_err_set(err, -EPROTO, -1, "GnuTLS: %s", gnutls_strerror(g));
	}
	s->verify_clients = t->verify_clients;
	s->timeout_ms = timeout_ms ? timeout_ms : 1;
	if (t->verify_clients)
		gnutls_certificate_server_set_request(s->s, GNUTLS_CERT_REQUIRE);
	gnutls_transport_set_int2(s->s, fd, fd);
	gnutls_handshake_set_timeout(s->s, s->timeout_ms);
	*out = s;
	return 0;
}

int server_tls_handshake(struct server_tls_sess *s, struct prof_err *err)
{
	gnutls_datum_t sel = { 0 };
	char why[160];
	int g = gnutls_handshake(s->s);

	if (g == GNUTLS_E_AGAIN || g == GNUTLS_E_INTERRUPTED)
		return -EAGAIN;
	if (g == GNUTLS_E_TIMEDOUT)
		return prof_err_set(err, -ETIMEDOUT, -1, "TLS handshake: timed out after %u ms",
				    s->timeout_ms);
	if (g == GNUTLS_E_PREMATURE_TERMINATION || g == GNUTLS_E_PULL_ERROR ||
	    g == GNUTLS_E_PUSH_ERROR)
		return prof_err_set(err, -ECONNRESET, -1, "TLS handshake: %s", gnutls_strerror(g));
	if (g == GNUTLS_E_NO_CERTIFICATE_FOUND || g == GNUTLS_E_CERTIFICATE_REQUIRED)
		return prof_err_set(err, -EACCES, -1,
				    "TLS handshake: no client certificate was sent");
	if (g < 0 && !gnutls_error_is_fatal(g))
		return -EAGAIN; /* a warning alert: go on */
	if (g < 0)
		return prof_err_set(err, -EPROTO, -1, "TLS handshake: %s", gnutls_strerror(g));
	/* GNUTLS_ALPN_MANDATORY fails the handshake of a client whose ALPN
	 * list lacks h2 (HTTP/1.1 over TLS cannot speak gRPC) and lets one
	 * without ALPN through (prior knowledge); what it selected is h2. */
	if (gnutls_alpn_get_selected_protocol(s->s, &sel) == 0 &&
	    (sel.size != 2 || memcmp(sel.data, "h2", 2)))
		return prof_err_set(err, -EPROTO, -1, "TLS handshake: ALPN '%.*s' instead of h2",
				    (int)PROF_MIN(sel.size, 32u), (const char *)sel.data);
	if (s->verify_clients && server_tls_check_peer(s->s, why, sizeof(why)))
		return prof_err_set(err, -EACCES, -1, "TLS: %s", why);
	return 0;
}

bool server_tls_want_write(struct server_tls_sess *s)
{
	return gnutls_record_get_direction(s->s) == 1;
}

ssize_t server_tls_recv(struct server_tls_sess *s, void *b, size_t n)
{
	ssize_t r = gnutls_record_recv(s->s, b, n);

	if (r >= 0)
		return r;
	if (r == GNUTLS_E_PREMATURE_TERMINATION)
		return 0; /* closed without close_notify: the end all the same */
	if (!gnutls_error_is_fatal((int)r))
		return -EAGAIN; /* EINTR, a rehandshake request, a warning alert */
	return r == GNUTLS_E_PULL_ERROR ? -ECONNRESET : -EPROTO;
}

ssize_t server_tls_send_some(struct server_tls_sess *s, const void *b, size_t n)
{
	ssize_t w = gnutls_record_send(s->s, b, n);

	if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
		return -EAGAIN;
	return w < 0 ? -EPIPE : w;
}

bool server_tls_pending(struct server_tls_sess *s)
{
	return gnutls_record_check_pending(s->s) > 0;
}

void server_tls_sess_free(struct server_tls_sess *s)
{
	if (!s)
		return;
	(void)gnutls_bye(s->s, GNUTLS_SHUT_WR);
	gnutls_deinit(s->s);
	free(s);
}
