// SPDX-License-Identifier: Apache-2.0
/*
 * conns.c - the connection guard: per-address admission, phase deadlines
 * and the sweep thread; see conns.h.
 *
 * Connections sit in one doubly linked list (the sweep walks it) and
 * each points at its client address's counter, kept in a chained hash
 * table while the address has a connection open.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/conns.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#define ADDR_BUCKETS 4096 /* power of two */
#define SWEEP_NS     (250 * 1000000LL)

struct conn_addr {
	struct conn_addr *next;
	unsigned char key[16]; /* IPv6, or IPv4 as ::ffff:a.b.c.d */
	unsigned open;
};

struct server_conn {
	struct server_conn *prev, *next;
	struct conn_addr *addr;
	int fd;
	enum server_conn_phase phase;
	bool closing;	   /* shut down by the sweep; waits for server_conns_close */
	int64_t since_ns;  /* the phase began */
	int64_t window_ns; /* BODY: the current window began */
	uint64_t bytes;	   /* BODY: bytes in the current window */
};

enum conn_reason {
	REFUSED_TOTAL,
	REFUSED_PER_CLIENT,
	CLOSED_HEADER,
	CLOSED_IDLE,
	CLOSED_UPLOAD,
	NREASONS,
};

static const char *const reason_label[NREASONS] = {
	[REFUSED_TOTAL] = "total",	    [REFUSED_PER_CLIENT] = "per_client",
	[CLOSED_HEADER] = "header_timeout", [CLOSED_IDLE] = "idle_timeout",
	[CLOSED_UPLOAD] = "slow_upload",
};

struct server_conns {
	struct server_conn_limits lim;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;
	pthread_t sweeper;
	struct server_conn *head;
	unsigned open;
	uint64_t counts[NREASONS];
	struct conn_addr *buckets[ADDR_BUCKETS];
};

void server_conn_limits_fill(struct server_conn_limits *l)
{
	if (!l->max_conns)
		l->max_conns = SERVER_CONNS_DEFAULT_MAX;
	if (!l->max_per_client)
		l->max_per_client = SERVER_CONNS_DEFAULT_PER_CLIENT;
	if (l->header_timeout_ns <= 0)
		l->header_timeout_ns = SERVER_CONNS_DEFAULT_HEADER_NS;
	if (l->idle_timeout_ns <= 0)
		l->idle_timeout_ns = SERVER_CONNS_DEFAULT_IDLE_NS;
	if (!l->min_upload_bps)
		l->min_upload_bps = SERVER_CONNS_DEFAULT_MIN_UPLOAD_BPS;
	if (l->upload_window_ns <= 0)
		l->upload_window_ns = SERVER_CONNS_DEFAULT_WINDOW_NS;
}

static void addr_key(const struct sockaddr *sa, socklen_t len, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		key[10] = key[11] = 0xff;
		memcpy(key + 12, &a->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

static size_t addr_hash(const unsigned char key[16])
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ key[i]) * 1099511628211ULL;
	return (size_t)(h ^ (h >> 29)) & (ADDR_BUCKETS - 1);
}

/* The counter of @key, created at 0 when missing. Under g->mu. */
static struct conn_addr *addr_get(struct server_conns *g, const unsigned char key[16])
{
	struct conn_addr **pp = &g->buckets[addr_hash(key)];

	for (struct conn_addr *a = *pp; a; a = a->next)
		if (!memcmp(a->key, key, 16))
			return a;
	struct conn_addr *a = xcalloc(1, sizeof(*a));
	memcpy(a->key, key, 16);
	a->next = *pp;
	*pp = a;
	return a;
}

/* Drop @a from its bucket when no connection uses it. Under g->mu. */
static void addr_put(struct server_conns *g, struct conn_addr *a)
{
	if (--a->open)
		return;
	for (struct conn_addr **pp = &g->buckets[addr_hash(a->key)]; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			free(a);
			return;
		}
	PROF_ASSERT(!"connection address not in its bucket");
}

static void *sweep_main(void *arg)
{
	struct server_conns *g = arg;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += SWEEP_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->cond, &g->mu, &ts);
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->mu);
		server_conns_sweep(g, prof_now_ns());
		pthread_mutex_lock(&g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

int server_conns_new(const struct server_conn_limits *l, struct server_conns **out,
		     struct prof_err *err)
{
	struct server_conns *g = xcalloc(1, sizeof(*g));

	*out = NULL;
	if (l)
		g->lim = *l;
	server_conn_limits_fill(&g->lim);
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cond, NULL);
	if (pthread_create(&g->sweeper, NULL, sweep_main, g)) {
		pthread_cond_destroy(&g->cond);
		pthread_mutex_destroy(&g->mu);
		free(g);
		return prof_err_set(err, -EAGAIN, -1, "server: cannot start the connection sweep");
	}
	*out = g;
	return 0;
}

void server_conns_free(struct server_conns *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->mu);
	g->stop = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->sweeper, NULL);
	if (g->open)
		log_warn("server: %u connections still tracked at stop", g->open);
	while (g->head)
		server_conns_close(g, g->head);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

struct server_conn *server_conns_open(struct server_conns *g, int fd, const struct sockaddr *addr,
				      socklen_t len)
{
	unsigned char key[16];
	struct server_conn *c;
	struct conn_addr *a;

	addr_key(addr, len, key);
	pthread_mutex_lock(&g->mu);
	if (g->open >= g->lim.max_conns) {
		g->counts[REFUSED_TOTAL]++;
		pthread_mutex_unlock(&g->mu);
		return NULL;
	}
	a = addr_get(g, key);
	if (a->open >= g->lim.max_per_client) {
		g->counts[REFUSED_PER_CLIENT]++;
		pthread_mutex_unlock(&g->mu);
		return NULL;
	}
	a->open++;
	c = xcalloc(1, sizeof(*c));
	c->addr = a;
	c->fd = fd;
	c->phase = SERVER_CONN_NEW;
	c->since_ns = prof_now_ns();
	c->next = g->head;
	if (g->head)
		g->head->prev = c;
	g->head = c;
	g->open++;
	pthread_mutex_unlock(&g->mu);
	return c;
}

void server_conns_close(struct server_conns *g, struct server_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	addr_put(g, c->addr);
	g->open--;
	pthread_mutex_unlock(&g->mu);
	free(c);
}

void server_conns_phase(struct server_conns *g, struct server_conn *c, enum server_conn_phase phase)
{
	if (!c)
		return;
	int64_t now = prof_now_ns();

	pthread_mutex_lock(&g->mu);
	c->phase = phase;
	c->since_ns = now;
	c->window_ns = now;
	c->bytes = 0;
	pthread_mutex_unlock(&g->mu);
}

void server_conns_body(struct server_conns *g, struct server_conn *c, size_t n)
{
	if (!c)
		return;
	pthread_mutex_lock(&g->mu);
	c->bytes += n;
	pthread_mutex_unlock(&g->mu);
}

/* The reason @c must go at @now, or NREASONS. Under g->mu. */
static enum conn_reason overdue(struct server_conns *g, struct server_conn *c, int64_t now)
{
	const struct server_conn_limits *l = &g->lim;

	switch (c->phase) {
	case SERVER_CONN_NEW:
		return now - c->since_ns >= l->header_timeout_ns ? CLOSED_HEADER : NREASONS;
	case SERVER_CONN_IDLE:
		return now - c->since_ns >= l->idle_timeout_ns ? CLOSED_IDLE : NREASONS;
	case SERVER_CONN_BODY:
		if (now - c->window_ns < l->upload_window_ns)
			return NREASONS;
		/* bytes per window, compared without dividing: rate * window */
		if ((double)c->bytes * 1e9 <
		    (double)l->min_upload_bps * (double)(now - c->window_ns))
			return CLOSED_UPLOAD;
		c->window_ns = now;
		c->bytes = 0;
		return NREASONS;
	default:
		return NREASONS;
	}
}

size_t server_conns_sweep(struct server_conns *g, int64_t now_ns)
{
	size_t n = 0;

	pthread_mutex_lock(&g->mu);
	for (struct server_conn *c = g->head; c; c = c->next) {
		enum conn_reason r;

		if (c->closing)
			continue;
		r = overdue(g, c, now_ns);
		if (r == NREASONS)
			continue;
		/* The listener closes the socket only after server_conns_close,
		 * which waits for this mutex: @fd is still this connection's. */
		shutdown(c->fd, SHUT_RDWR);
		c->closing = true;
		g->counts[r]++;
		n++;
	}
	pthread_mutex_unlock(&g->mu);
	if (n)
		log_debug("server: closed %zu connections past their deadline", n);
	return n;
}

unsigned server_conns_open_count(struct server_conns *g)
{
	unsigned n;

	pthread_mutex_lock(&g->mu);
	n = g->open;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void server_conns_write_metrics(struct server_conns *g, struct buf *b)
{
	uint64_t counts[NREASONS];
	unsigned open;

	pthread_mutex_lock(&g->mu);
	open = g->open;
	memcpy(counts, g->counts, sizeof(counts));
	pthread_mutex_unlock(&g->mu);
	(void)buf_addf(b,
		       "# HELP profd_connections_open Client connections open (HTTP and gRPC).\n"
		       "# TYPE profd_connections_open gauge\nprofd_connections_open %u\n",
		       open);
	(void)buf_addf(b,
		       "# HELP profd_connections_limit The max-connections limit.\n"
		       "# TYPE profd_connections_limit gauge\nprofd_connections_limit %u\n",
		       g->lim.max_conns);
	(void)buf_addf(b,
		       "# HELP profd_connections_per_client_limit The max-connections-per-client "
		       "limit.\n# TYPE profd_connections_per_client_limit gauge\n"
		       "profd_connections_per_client_limit %u\n",
		       g->lim.max_per_client);
	(void)buf_addstr(b, "# HELP profd_connections_refused_total Connections refused at accept, "
			    "by the limit they hit.\n"
			    "# TYPE profd_connections_refused_total counter\n");
	for (int r = REFUSED_TOTAL; r <= REFUSED_PER_CLIENT; r++)
		(void)buf_addf(b, "profd_connections_refused_total{reason=\"%s\"} %" PRIu64 "\n",
			       reason_label[r], counts[r]);
	(void)buf_addstr(b, "# HELP profd_connections_closed_total Connections closed by the "
			    "server for a deadline, by reason.\n"
			    "# TYPE profd_connections_closed_total counter\n");
	for (int r = CLOSED_HEADER; r < NREASONS; r++)
		(void)buf_addf(b, "profd_connections_closed_total{reason=\"%s\"} %" PRIu64 "\n",
			       reason_label[r], counts[r]);
}
