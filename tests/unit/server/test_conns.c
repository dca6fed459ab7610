// SPDX-License-Identifier: Apache-2.0
/*
 * test_conns.c - the connection guard (server/conns.h) and the handler
 * pool (server/workers.h), driven directly:
 *   - admission: per-client and total limits, a v4-mapped IPv6 address
 *     counted as its IPv4 one, a closed connection's place given back,
 *     refusals counted by reason in the metrics;
 *   - deadlines: a connection that never completes its headers goes at
 *     header_timeout, an idle keep-alive one at idle_timeout, an upload
 *     slower than min_upload_bps over a window goes, a faster one stays
 *     until it stalls, a busy one never; the peer sees the end of the
 *     stream; nothing is closed twice; closes counted by reason;
 *   - the pool: every job submitted runs before free returns, never more
 *     at once than the limit, one thread takes jobs in FIFO order.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/parse.h"
#include "server/conns.h"
#include "server/workers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#define SEC 1000000000LL

static struct sockaddr_storage v4(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;

	a->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };

	assert_int_equal(inet_pton(AF_INET6, ip, &a6.sin6_addr), 1);
	memcpy(&ss, &a6, sizeof(a6));
	return ss;
}

static struct server_conn *open_from(struct server_conns *g, int fd, struct sockaddr_storage ss)
{
	socklen_t len =
		ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	return server_conns_open(g, fd, (const struct sockaddr *)&ss, len);
}

/* The value of the metric line that starts with @series in @b, or -1. */
static long metric(const struct buf *b, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = b->p; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtol(p + n + 1, NULL, 10);
	return -1;
}

static struct server_conns *guard(unsigned max, unsigned per_client)
{
	struct server_conn_limits l = {
		.max_conns = max,
		.max_per_client = per_client,
		.header_timeout_ns = 10 * SEC,
		.idle_timeout_ns = 20 * SEC,
		.min_upload_bps = 1000,
		.upload_window_ns = 5 * SEC,
	};
	struct server_conns *g = NULL;
	struct prof_err err = { 0 };

	assert_int_equal(server_conns_new(&l, &g, &err), 0);
	assert_non_null(g);
	return g;
}

static void test_conns_admission_limits(void **state)
{
	(void)state;
	struct server_conns *g = guard(3, 2);
	struct server_conn *a, *b, *c, *d;
	struct buf m;

	a = open_from(g, 100, v4("10.0.0.1"));
	b = open_from(g, 101, v4("10.0.0.1"));
	assert_non_null(a);
	assert_non_null(b);
	assert_null(open_from(g, 102, v4("10.0.0.1")));
	assert_null(open_from(g, 103, v6("::ffff:10.0.0.1")));
	c = open_from(g, 104, v6("2001:db8::1"));
	assert_non_null(c);
	assert_int_equal(server_conns_open_count(g), 3);
	assert_null(open_from(g, 105, v4("10.0.0.3")));
	server_conns_close(g, a);
	d = open_from(g, 106, v6("::ffff:10.0.0.1"));
	assert_non_null(d);
	assert_null(open_from(g, 107, v4("10.0.0.1")));

	buf_init(&m, 0);
	server_conns_write_metrics(g, &m);
	assert_int_equal(metric(&m, "profd_connections_open"), 3);
	assert_int_equal(metric(&m, "profd_connections_limit"), 3);
	assert_int_equal(metric(&m, "profd_connections_per_client_limit"), 2);
	assert_int_equal(metric(&m, "profd_connections_refused_total{reason=\"per_client\"}"), 2);
	assert_int_equal(metric(&m, "profd_connections_refused_total{reason=\"total\"}"), 2);
	buf_release(&m);
	server_conns_close(g, b);
	server_conns_close(g, c);
	server_conns_close(g, d);
	assert_int_equal(server_conns_open_count(g), 0);
	server_conns_free(g);
}

/* True when the peer of a socket the guard shut down reads end of stream. */
static bool peer_sees_end(int peer)
{
	char ch;

	return recv(peer, &ch, 1, MSG_DONTWAIT) == 0;
}

static void test_conns_deadlines(void **state)
{
	(void)state;
	struct server_conns *g = guard(16, 16);
	int sp[5][2];
	struct server_conn *c[5];
	struct buf m;
	int64_t t0, t1;

	for (int i = 0; i < 5; i++)
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp[i]), 0);
	t0 = prof_now_ns();
	for (int i = 0; i < 5; i++)
		c[i] = open_from(g, sp[i][0], v4("127.0.0.1"));
	server_conns_phase(g, c[1], SERVER_CONN_IDLE);
	server_conns_phase(g, c[2], SERVER_CONN_BUSY);
	server_conns_phase(g, c[3], SERVER_CONN_BODY);
	server_conns_phase(g, c[4], SERVER_CONN_BODY);
	t1 = prof_now_ns();
	server_conns_body(g, c[3], 4000); /* under 1000 B/s over a 5 s window */
	server_conns_body(g, c[4], 6000); /* over it, then nothing */

	assert_int_equal(server_conns_sweep(g, t0 + 4 * SEC), 0);
	/* 5.5 s into the window: the slow upload goes, the fast one starts a new window */
	assert_int_equal(server_conns_sweep(g, t1 + 5 * SEC + SEC / 2), 1);
	assert_true(peer_sees_end(sp[3][1]));
	assert_false(peer_sees_end(sp[4][1]));
	assert_int_equal(server_conns_sweep(g, t0 + 9 * SEC), 0);
	/* past the header deadline of c[0]; c[4]'s second window has no bytes */
	assert_int_equal(server_conns_sweep(g, t1 + 10 * SEC + SEC / 2 + SEC / 10), 2);
	assert_true(peer_sees_end(sp[0][1]));
	assert_true(peer_sees_end(sp[4][1]));
	assert_false(peer_sees_end(sp[1][1]));
	assert_int_equal(server_conns_sweep(g, t1 + 20 * SEC + SEC / 10), 1);
	assert_true(peer_sees_end(sp[1][1]));
	/* busy connections have no deadline of the guard's; closed ones are not closed again */
	assert_int_equal(server_conns_sweep(g, t1 + 3600 * SEC), 0);
	assert_false(peer_sees_end(sp[2][1]));

	buf_init(&m, 0);
	server_conns_write_metrics(g, &m);
	assert_int_equal(metric(&m, "profd_connections_closed_total{reason=\"header_timeout\"}"),
			 1);
	assert_int_equal(metric(&m, "profd_connections_closed_total{reason=\"idle_timeout\"}"), 1);
	assert_int_equal(metric(&m, "profd_connections_closed_total{reason=\"slow_upload\"}"), 2);
	assert_int_equal(metric(&m, "profd_connections_open"), 5);
	buf_release(&m);
	for (int i = 0; i < 5; i++) {
		server_conns_close(g, c[i]);
		close(sp[i][0]);
		close(sp[i][1]);
	}
	server_conns_free(g);
}

struct counted_job {
	struct server_job job;
	unsigned id;
	struct pool_state *st;
};

struct pool_state {
	pthread_mutex_t mu;
	unsigned running, max_running, done;
	unsigned order[64], n_order;
};

static void counted_run(struct server_job *job)
{
	struct counted_job *cj = (struct counted_job *)job;
	struct pool_state *st = cj->st;

	pthread_mutex_lock(&st->mu);
	st->running++;
	if (st->running > st->max_running)
		st->max_running = st->running;
	st->order[st->n_order++] = cj->id;
	pthread_mutex_unlock(&st->mu);
	usleep(2000);
	pthread_mutex_lock(&st->mu);
	st->running--;
	st->done++;
	pthread_mutex_unlock(&st->mu);
}

static void run_pool(unsigned threads, unsigned jobs, struct pool_state *st)
{
	struct server_workers *w = server_workers_new("test", threads);
	struct counted_job cj[64];
	struct buf m;

	assert_true(jobs <= 64);
	memset(st, 0, sizeof(*st));
	pthread_mutex_init(&st->mu, NULL);
	for (unsigned i = 0; i < jobs; i++) {
		cj[i] = (struct counted_job){ .job.fn = counted_run, .id = i, .st = st };
		assert_int_equal(server_workers_submit(w, &cj[i].job), 0);
	}
	buf_init(&m, 0);
	server_workers_write_metrics(w, &m, true);
	assert_int_equal(metric(&m, "profd_workers_limit{pool=\"test\"}"), threads);
	assert_true(metric(&m, "profd_workers_threads{pool=\"test\"}") <= (long)threads);
	buf_release(&m);
	server_workers_free(w);
	pthread_mutex_destroy(&st->mu);
}

static void test_workers_run_all_within_limit(void **state)
{
	(void)state;
	struct pool_state st;

	run_pool(3, 40, &st);
	assert_int_equal(st.done, 40);
	assert_int_equal(st.n_order, 40);
	assert_true(st.max_running <= 3);
	assert_true(st.max_running >= 1);

	run_pool(1, 20, &st);
	assert_int_equal(st.done, 20);
	assert_int_equal(st.max_running, 1);
	for (unsigned i = 0; i < 20; i++)
		assert_int_equal(st.order[i], i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conns_admission_limits),
		cmocka_unit_test(test_conns_deadlines),
		cmocka_unit_test(test_workers_run_all_within_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
