// SPDX-License-Identifier: Apache-2.0
/* metrics.c - the agent's /metrics endpoint; see metrics.h. */
#include "base/compat.h"
#include "base/mhd_dl.h"
#include "base/mem.h"
#include "base/parse.h"
#include "agent/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

struct agent_metrics {
	struct MHD_Daemon *d;
	unsigned port;
	pthread_mutex_t mu;
	char *page; /* under mu */
	size_t len;
};

static enum MHD_Result metrics_on_request(void *cls, struct MHD_Connection *conn, const char *url,
					  const char *method, const char *version,
					  const char *upload_data, size_t *upload_size,
					  void **con_cls)
{
	struct agent_metrics *m = cls;
	struct MHD_Response *resp;
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result ret;
	char *copy;
	size_t len;

	(void)version, (void)upload_data, (void)con_cls;
	if (*upload_size) {
		*upload_size = 0; /* discard any body */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		copy = xstrdup("method not allowed\n");
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics")) {
		copy = xstrdup("not found: the agent serves /metrics only\n");
		status = MHD_HTTP_NOT_FOUND;
	} else {
		pthread_mutex_lock(&m->mu);
		len = m->len;
		copy = xmalloc(len + 1);
		if (len)
			memcpy(copy, m->page, len);
		copy[len] = '\0';
		pthread_mutex_unlock(&m->mu);
	}
	len = strlen(copy);
	resp = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(copy);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						      : "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static int metrics_parse_addr(const char *listen, struct sockaddr_in *sa)
{
	const char *colon = strrchr(listen, ':');
	char host[64];
	uint64_t port;

	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof(host) ||
	    parse_u64(colon + 1, &port) || port > 65535)
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

int agent_metrics_start(const char *listen, struct agent_metrics **out, struct prof_err *err)
{
	struct agent_metrics *m;
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *info;
	int rc;

	*out = NULL;
	if (!listen || metrics_parse_addr(listen, &sa))
		return prof_err_set(err, -EINVAL, -1,
				    "--metrics-listen '%s': want HOST:PORT with an IPv4 address "
				    "(e.g. 127.0.0.1:9464)",
				    listen ? listen : "");
	rc = prof_mhd_load(err);
	if (rc)
		return rc;
	m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					MHD_USE_ITC,
				0, NULL, NULL, metrics_on_request, m, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, (unsigned)4,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)5, MHD_OPTION_END);
	if (!m->d) {
		int rc = errno ? -errno : -EADDRINUSE;

		pthread_mutex_destroy(&m->mu);
		free(m);
		return prof_err_set(err, rc, -1, "--metrics-listen %s: cannot listen: %s", listen,
				    strerror(-rc));
	}
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : ntohs(sa.sin_port);
	*out = m;
	return 0;
}

unsigned agent_metrics_port(const struct agent_metrics *m)
{
	return m->port;
}

void agent_metrics_publish(struct agent_metrics *m, const char *text, size_t n)
{
	char *copy = xmalloc(n + 1);

	memcpy(copy, text, n);
	copy[n] = '\0';
	pthread_mutex_lock(&m->mu);
	free(m->page);
	m->page = copy;
	m->len = n;
	pthread_mutex_unlock(&m->mu);
}

void agent_metrics_stop(struct agent_metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	pthread_mutex_destroy(&m->mu);
	free(m->page);
	free(m);
}
