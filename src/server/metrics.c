// SPDX-License-Identifier: Apache-2.0
/* metrics.c - labelled counters and a latency histogram; see metrics.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "server/metrics.h"

#include <pthread.h>

static const struct {
	const char *name, *help;
} families[] = {
	{ "profd_http_requests_total", "HTTP requests answered, by route and status code." },
	{ "profd_http_request_bytes_total", "HTTP request body bytes read, by route." },
	{ "profd_ingest_requests_total", "Ingest requests stored, by dataset and source." },
	{ "profd_ingest_samples_total",
	  "Sample rows received, accepted (stored) and dropped by signal control." },
	{ "profd_ingest_rejects_total", "Ingest requests refused, by reason." },
	{ "profd_grpc_requests_total", "gRPC calls answered, by method and grpc-status." },
	{ "profd_tls_client_refused_total",
	  "Requests (HTTP) and connections (gRPC) refused for their client certificate." },
};

/* Upper bounds of the ingest latency histogram, seconds. */
static const double buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				  0.1,	 0.25,	 0.5,	1,    2.5,   10 };

struct counter {
	const char *family;
	char *labels;
	uint64_t v;
};

struct server_metrics {
	pthread_mutex_t lock;
	VEC(struct counter) c;
	uint64_t hist[PROF_ARRAY_SIZE(buckets) + 1];
	uint64_t hist_count;
	double hist_sum;
};

struct server_metrics *server_metrics_new(void)
{
	struct server_metrics *m = xcalloc(1, sizeof(*m));

	pthread_mutex_init(&m->lock, NULL);
	return m;
}

void server_metrics_free(struct server_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->c.n; i++)
		free(m->c.v[i].labels);
	VEC_FREE(&m->c);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void server_metrics_escape(const char *s, char *out, size_t outsz)
{
	size_t n = 0;

	if (!outsz)
		return;
	for (; *s && n + 3 < outsz; s++) {
		if (*s == '\\' || *s == '"') {
			out[n++] = '\\';
			out[n++] = *s;
		} else if (*s == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *s;
		}
	}
	out[n] = '\0';
}

void server_metrics_inc(struct server_metrics *m, const char *family, const char *labels,
			uint64_t v)
{
	size_t same = 0;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->c.n; i++) {
		struct counter *c = &m->c.v[i];

		if (c->family != family && strcmp(c->family, family))
			continue;
		same++;
		if (!strcmp(c->labels, labels)) {
			c->v += v;
			pthread_mutex_unlock(&m->lock);
			return;
		}
	}
	struct counter nc = { family, NULL, v };
	if (same >= SERVER_METRICS_MAX_SERIES) {
		/* Fold into one overflow set; search it first. */
		for (size_t i = 0; i < m->c.n; i++)
			if (!strcmp(m->c.v[i].family, family) &&
			    !strcmp(m->c.v[i].labels, "overflow=\"other\"")) {
				m->c.v[i].v += v;
				pthread_mutex_unlock(&m->lock);
				return;
			}
		nc.labels = xstrdup("overflow=\"other\"");
	} else {
		nc.labels = xstrdup(labels);
	}
	VEC_PUSH(&m->c, nc);
	pthread_mutex_unlock(&m->lock);
}

void server_metrics_observe_ingest(struct server_metrics *m, int64_t ns)
{
	double s = (double)ns / 1e9;
	size_t b = 0;

	if (!m)
		return;
	while (b < PROF_ARRAY_SIZE(buckets) && s > buckets[b])
		b++;
	pthread_mutex_lock(&m->lock);
	m->hist[b]++;
	m->hist_count++;
	m->hist_sum += s;
	pthread_mutex_unlock(&m->lock);
}

int server_metrics_write(struct server_metrics *m, struct buf *out)
{
	pthread_mutex_lock(&m->lock);
	for (size_t f = 0; f < PROF_ARRAY_SIZE(families); f++) {
		(void)buf_addf(out, "# HELP %s %s\n# TYPE %s counter\n", families[f].name,
			       families[f].help, families[f].name);
		for (size_t i = 0; i < m->c.n; i++) {
			const struct counter *c = &m->c.v[i];

			if (strcmp(c->family, families[f].name))
				continue;
			(void)buf_addf(out, "%s{%s} %" PRIu64 "\n", c->family, c->labels, c->v);
		}
	}
	(void)buf_addstr(out, "# HELP profd_ingest_duration_seconds Time to decode, check and "
			      "durably store an accepted ingest request.\n"
			      "# TYPE profd_ingest_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t b = 0; b < PROF_ARRAY_SIZE(buckets); b++) {
		cum += m->hist[b];
		(void)buf_addf(out, "profd_ingest_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			       buckets[b], cum);
	}
	cum += m->hist[PROF_ARRAY_SIZE(buckets)];
	(void)buf_addf(out, "profd_ingest_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
	(void)buf_addf(out, "profd_ingest_duration_seconds_sum %.6f\n", m->hist_sum);
	int rc = buf_addf(out, "profd_ingest_duration_seconds_count %" PRIu64 "\n", m->hist_count);
	pthread_mutex_unlock(&m->lock);
	return rc;
}
