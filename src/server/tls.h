/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tls.h - the server's TLS: one certificate and key (PEM files) for every
 * listener, and optionally a CA whose certificates clients must present
 * (--tls-client-ca: mutual TLS for agents).
 *
 * The HTTP listeners are libmicrohttpd's, which speaks TLS itself with
 * GnuTLS: http.c hands it the PEM text read here (server_tls_*_pem) and
 * checks each request's client certificate with server_tls_check_peer on
 * the session MHD made. The gRPC listener is our own event loop
 * (grpc.c) over non-blocking sockets: server_tls_start and
 * server_tls_handshake do the handshake step by step with ALPN "h2"
 * (gRPC clients refuse a TLS server that does not select it) and
 * server_tls_recv / _send_some carry nghttp2's bytes. Both use the
 * same GnuTLS (base/gnutls_dl.h) and the same protocol versions, TLS 1.2
 * and 1.3 (SERVER_TLS_PRIORITIES).
 *
 * The files are read once, at server_tls_new, and checked there (a key
 * that does not match its certificate, a CA file without a certificate,
 * unreadable files are errors before any listener starts); to take new
 * certificates, restart the server. Client certificates are verified
 * against the CA file's certificates only (not the system's store), with
 * GnuTLS's chain, signature and validity-period checks, and an extended
 * key usage, where the certificate has one, must include TLS client
 * authentication; no name in them is checked (any client certificate
 * the CA signed is accepted).
 *
 * Thread-safety: a struct server_tls is read-only after _new and may be
 * used by any number of threads; a struct server_tls_sess belongs to one
 * thread at a time.
 */
#ifndef PROF_SERVER_TLS_H
#define PROF_SERVER_TLS_H

#include "base/compat.h"
#include "base/err.h"

/* TLS 1.2 and 1.3 with GnuTLS's default ("NORMAL") ciphers for them. */
#define SERVER_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
/* Largest certificate, key or CA file read (a CA bundle fits many times). */
#define SERVER_TLS_MAX_FILE ((size_t)4 << 20)

/** struct server_tls_conf - PEM file paths; @client_ca may be NULL (no client certificates). */
struct server_tls_conf {
	const char *cert; /* the server's certificate, then any intermediates */
	const char *key;  /* its private key, unencrypted */
	const char *client_ca;
};

struct server_tls;
struct server_tls_sess;

/**
 * server_tls_new() - read and check the files of @c (copied; the paths
 * are not kept). *@out is the caller's, freed with server_tls_free.
 * Errors: -errno for a file that cannot be read, -PROF_ETOOBIG for one
 * over SERVER_TLS_MAX_FILE, -EINVAL for contents GnuTLS refuses (not a
 * certificate, a key that does not match it, a CA file with no
 * certificate), -PROF_EUNSUPPORTED without GnuTLS; @err names the file
 * and GnuTLS's reason.
 */
int server_tls_new(const struct server_tls_conf *c, struct server_tls **out, struct prof_err *err);

/** server_tls_free() - wipe the key's bytes and free; NULL ok. Not while sessions use @t. */
void server_tls_free(struct server_tls *t);

/** server_tls_cert_pem() - the certificate file's text, NUL-terminated; lent for @t's life. */
const char *server_tls_cert_pem(const struct server_tls *t);
/** server_tls_key_pem() - the key file's text, NUL-terminated; lent for @t's life. */
const char *server_tls_key_pem(const struct server_tls *t);
/** server_tls_client_ca_pem() - the client CA file's text, or NULL without one; lent. */
const char *server_tls_client_ca_pem(const struct server_tls *t);

/**
 * server_tls_check_peer() - whether the peer of @session (a
 * gnutls_session_t, as libmicrohttpd's MHD_CONNECTION_INFO_GNUTLS_SESSION
 * gives it) sent a certificate that the trusted CAs of the session's
 * credentials verify. 0 if so; else -EACCES with @why (@whysz bytes)
 * saying what is wrong: no certificate, not signed by the CA, expired, ...
 * Call it only after the handshake, with GnuTLS loaded (server_tls_new).
 */
int server_tls_check_peer(void *session, char *why, size_t whysz);

/**
 * server_tls_start() - a server TLS session over the connected socket
 * @fd (blocking or not), offering ALPN "h2" (a client that offers ALPN
 * without h2 is refused; one that offers none is served, as prior
 * knowledge), requiring a client certificate when @t has a client CA.
 * No I/O yet: drive the handshake with server_tls_handshake. The
 * handshake may take @timeout_ms (at least 1). *@out is the caller's,
 * freed with server_tls_sess_free; the socket stays the caller's.
 * Errors: -ENOMEM, -EPROTO (GnuTLS refused the settings).
 */
int server_tls_start(const struct server_tls *t, int fd, unsigned timeout_ms,
		     struct server_tls_sess **out, struct prof_err *err);

/**
 * server_tls_handshake() - go on with the handshake of @s. 0 when it is
 * complete (ALPN checked, the client certificate verified against the
 * client CA); -EAGAIN when the socket would block: call again when it is
 * readable, or writable if server_tls_want_write. Errors: -ECONNRESET
 * for a peer that went away, -ETIMEDOUT, -EPROTO for a failed handshake
 * (not TLS, no shared protocol, no ALPN h2), -EACCES for a client
 * certificate that is missing or not the CA's; @err says which, in
 * GnuTLS's words. After an error only server_tls_sess_free is allowed.
 */
int server_tls_handshake(struct server_tls_sess *s, struct prof_err *err);

/** server_tls_want_write() - whether the last call that would block wanted to write. */
bool server_tls_want_write(struct server_tls_sess *s);

/**
 * server_tls_recv() - read up to @n decrypted bytes into @b (blocks as
 * recv(2) does on a blocking socket). The count, 0 at the end of the
 * stream (close_notify or a plain close), -EAGAIN when the socket has no
 * more (non-blocking), when interrupted or when a record carried no data,
 * or -EPROTO / -ECONNRESET for a broken connection.
 */
ssize_t server_tls_recv(struct server_tls_sess *s, void *b, size_t n);

/**
 * server_tls_send_some() - send at most one record of @b (@n bytes;
 * keep @n <= 16 KiB to send it whole). The bytes sent, -EAGAIN when the
 * socket would block, or -EPIPE on a broken connection. After -EAGAIN the
 * record is kept by GnuTLS: call again with @b NULL and @n 0 to send it
 * (GnuTLS's rule for gnutls_record_send), which returns its size.
 */
ssize_t server_tls_send_some(struct server_tls_sess *s, const void *b, size_t n);

/** server_tls_pending() - whether decrypted bytes wait to be read (poll(2) cannot see them). */
bool server_tls_pending(struct server_tls_sess *s);

/**
 * server_tls_sess_free() - send close_notify (without waiting for the
 * peer's) and free; NULL ok. The socket is not closed.
 */
void server_tls_sess_free(struct server_tls_sess *s);

#endif
