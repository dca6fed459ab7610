// SPDX-License-Identifier: Apache-2.0
/*
 * ingestload.c - test and benchmark helper: N concurrent clients POST
 * agent-shaped OTLP requests to a profd server for a while and count
 * what the server acknowledged.
 *
 *   ingestload --port P [--host 127.0.0.1] [--clients 8] [--seconds 10]
 *              [--samples 200] [--stacks 50] [--depth 24] [--token T]
 *              [--dataset D] [--service NAME] [--acked-file F] [--pprof]
 *              [--parca] [--spread SECONDS] [--replay FILE]...
 *              [--check-type TYPE]
 *
 * With --pprof the same profile goes to Pyroscope's /ingest as pprof
 * (name=NAME{client=<i>}, format=pprof; labels service_name and client),
 * encoded again before each send with the present time (a server that
 * keeps one profile per series and timestamp, as Pyroscope does, would
 * otherwise store one request per client).
 *
 * With --spread S (--pprof or --parca) each request is stamped at a time
 * in the last S seconds instead of the present, spread evenly by client
 * and sequence number, and the Pyroscope push says so with from/until
 * (unix seconds, 10 s apart): a backfill of S seconds of data for
 * queries over long ranges.
 *
 * With --parca the same pprof goes to a Parca server's HTTP gateway of
 * ProfileStoreService.WriteRaw (POST /api/profiles/writeraw, JSON: series
 * with labels __name__=process_cpu, service_name=NAME, client=<i>, one
 * raw sample holding the pprof in base64, normalized=true; message
 * shapes from parca's proto/parca/profilestore/v1alpha1/profilestore.proto).
 *
 * Each request is one OTLP profile of service NAME (label client=<i>)
 * with --samples samples, each of value
 * 1 at type samples/count with period cpu/nanoseconds (profile type
 * process_cpu:samples:count:cpu:nanoseconds), spread over --stacks
 * distinct stacks --depth frames deep, its times moved to the present
 * before each send. So the flame graph total of
 * {service.name="NAME"} is exactly the number of samples stored, and a
 * request is either wholly stored or not at all: the total is a multiple
 * of --samples.
 *
 * With --replay (repeatable) the requests are the given files instead:
 * uncompressed OTLP request bodies as `profd agent --dump DIR` writes
 * them, sent gzipped (Content-Encoding: gzip) as the agent sends them,
 * each client cycling through the files from its own starting point. A
 * request then counts the rows it holds (model samples with a non-zero
 * value, what the server reports as accepted) as its samples, and
 * acked_value sums the values of its profiles of type --check-type
 * (default process_cpu:cpu:nanoseconds:cpu:nanoseconds), so the flame
 * graph total of that type over {} can be compared with it.
 *
 * The client speaks HTTP/1.1 with keep-alive over a plain socket (no
 * library, so it measures the server, not a client stack). A request
 * counts as acknowledged on a 200 answer; 429/503 are counted apart and
 * retried after a short pause; any other answer is an error. With
 * --acked-file the running count of acknowledged samples is rewritten
 * there after every answer (for crash tests that kill the server).
 *
 * Prints one JSON object: requests, acked_samples, errors, retries,
 * seconds, requests_per_s, samples_per_s, p50_ms, p99_ms, max_ms, and
 * with --replay acked_value and replay_bytes (mean body bytes, gzipped).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "format/pprof.h"
#include "model/profile.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

struct opts {
	const char *host, *token, *dataset, *service, *acked_file, *check_type;
	unsigned port, clients, seconds, samples, stacks, depth, spread;
	bool pprof, parca;
};

static struct opts o = { .host = "127.0.0.1",
			 .service = "load",
			 .check_type = "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
			 .clients = 8,
			 .seconds = 10,
			 .samples = 200,
			 .stacks = 50,
			 .depth = 24 };

/* --replay: the recorded requests, gzipped, with what each one holds. */
struct replay {
	struct buf body;
	uint64_t rows;	/* model samples with a non-zero value */
	uint64_t value; /* sum of the values of profiles of type o.check_type */
};
static VEC(struct replay) replays;
static VEC(const char *) replay_paths;
static uint64_t acked_total; /* atomic */
static pthread_mutex_t acked_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where the times of a client's request are (find_times), and their base. */
struct time_offs {
	size_t *v;
	size_t n, cap;
	int64_t base;
};

struct client {
	unsigned id;
	pthread_t th;
	uint64_t requests, acked, acked_value, errors, retries;
	VEC(double) lat_ms;
	struct time_offs times;
};

/* Encodes one request into @out; returns its time (unix ns). */
/* With --spread: how far in the past request @seq of @client lies, in ns. */
static int64_t request_age_ns(unsigned client, uint64_t seq)
{
	if (!o.spread)
		return 0;
	/* Weyl sequence over the clients' interleaved requests: even cover */
	uint64_t k = seq * o.clients + client;

	return (int64_t)((k * 40503u) % (o.spread * 10u)) * 100000000LL;
}

/* Base64 (RFC 4648, standard alphabet, padded) of @n bytes at @p onto @out. */
static void base64_put(struct buf *out, const uint8_t *p, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		char q[4];

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		q[0] = al[v >> 18 & 63];
		q[1] = al[v >> 12 & 63];
		q[2] = i + 1 < n ? al[v >> 6 & 63] : '=';
		q[3] = i + 2 < n ? al[v & 63] : '=';
		(void)buf_add(out, q, 4);
	}
}

/* Parca's WriteRawRequest as the gateway's JSON around the pprof @pb. */
static void parca_wrap(const struct buf *pb, unsigned client, struct buf *out)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "{\"normalized\":true,\"series\":[{\"labels\":{\"labels\":["
			 "{\"name\":\"__name__\",\"value\":\"process_cpu\"},"
			 "{\"name\":\"service_name\",\"value\":\"%s\"},"
			 "{\"name\":\"client\",\"value\":\"%u\"}]},"
			 "\"samples\":[{\"rawProfile\":\"",
			 o.service, client);

	buf_reset(out);
	(void)buf_add(out, head, (size_t)n);
	base64_put(out, (const uint8_t *)pb->p, pb->len);
	(void)buf_add(out, "\"}]}]}", 6);
}

static int64_t build_request(unsigned client, uint64_t seq, struct buf *out)
{
	struct model_profile p;
	const struct model_profile *pp = &p;
	uint32_t locs[64], depth = PROF_MIN(o.depth, 64);
	char name[64];
	int64_t now = prof_now_ns() - request_age_ns(client, seq);

	model_profile_init(&p);
	model_sample_type_add(&p, "samples", "count");
	p.period_type.type = model_intern(&p, "cpu");
	p.period_type.unit = model_intern(&p, "nanoseconds");
	p.period = 10000000;
	p.time_ns = now;
	/* Functions f0..f(depth*stacks) so stacks differ but share prefixes. */
	for (unsigned s = 0; s < o.stacks; s++) {
		for (uint32_t d = 0; d < depth; d++) {
			struct model_function f = { 0 };
			struct model_line ln = { 0 };

			snprintf(name, sizeof(name), "fn_%u_%u", d, d < depth / 2 ? 0 : s);
			f.name = model_intern(&p, name);
			ln.function = model_function_intern(&p, f.name, 0, 0, 0);
			/* leaf first */
			locs[depth - 1 - d] = model_location_add(&p, 0, 0, &ln, 1);
		}
		uint32_t st = model_stack_add(&p, locs, depth);

		for (unsigned i = s; i < o.samples; i += o.stacks) {
			int64_t one = 1;

			model_sample_add(&p, st, depth, &one, NULL, 0, now + i, 0);
		}
	}
	model_attr_add_str(&p, "service.name", o.service);
	model_attr_add_num(&p, "client", client);
	(void)seq;
	buf_reset(out);
	if (o.parca) {
		struct buf pb;

		buf_init(&pb, 0);
		PROF_ASSERT(fmt_pprof_encode(&p, true, &pb) == 0);
		parca_wrap(&pb, client, out);
		buf_release(&pb);
	} else if (o.pprof)
		PROF_ASSERT(fmt_pprof_encode(&p, true, out) == 0);
	else
		PROF_ASSERT(fmt_otlp_encode(&pp, 1, out) == 0);
	model_profile_release(&p);
	return now;
}

static int dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o.port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	inet_pton(AF_INET, o.host, &a.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* POST one request; returns the HTTP status, 0 on a connection error. */
static unsigned post(int *fd, const struct buf *body, unsigned client, int64_t t_ns)
{
	char hdr[768], resp[8192], path[256];
	size_t have = 0, need = 0;
	unsigned status = 0;
	int n;

	if (*fd < 0 && (*fd = dial()) < 0)
		return 0;
	if (o.parca)
		snprintf(path, sizeof(path), "/api/profiles/writeraw");
	else if (o.pprof && o.spread)
		snprintf(path, sizeof(path),
			 "/ingest?name=%s%%7Bclient%%3D%u%%7D&format=pprof&spyName=ingestload"
			 "&from=%" PRId64 "&until=%" PRId64,
			 o.service, client, t_ns / 1000000000, t_ns / 1000000000 + 10);
	else if (o.pprof)
		snprintf(path, sizeof(path),
			 "/ingest?name=%s%%7Bclient%%3D%u%%7D&format=pprof&spyName=ingestload",
			 o.service, client);
	else
		snprintf(path, sizeof(path), "/v1development/profiles");
	n = snprintf(hdr, sizeof(hdr),
		     "POST %s HTTP/1.1\r\nHost: %s:%u\r\n"
		     "Content-Type: %s\r\nContent-Length: %zu\r\n%s%s%s%s%s%s%s\r\n",
		     path, o.host, o.port,
		     o.parca   ? "application/json"
		     : o.pprof ? "application/octet-stream"
			       : "application/x-protobuf",
		     body->len, replays.n ? "Content-Encoding: gzip\r\n" : "",
		     o.token ? "Authorization: Bearer " : "", o.token ? o.token : "",
		     o.token ? "\r\n" : "", o.dataset ? "X-Profd-Dataset: " : "",
		     o.dataset ? o.dataset : "", o.dataset ? "\r\n" : "");
	if (!write_all(*fd, hdr, (size_t)n) || !write_all(*fd, body->p, body->len))
		goto broken;
	for (;;) {
		ssize_t r = recv(*fd, resp + have, sizeof(resp) - 1 - have, 0);
		char *end;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto broken;
		have += (size_t)r;
		resp[have] = '\0';
		end = strstr(resp, "\r\n\r\n");
		if (!end) {
			if (have >= sizeof(resp) - 1)
				goto broken;
			continue;
		}
		if (!need) {
			char *cl = strcasestr(resp, "\r\nContent-Length:");
			uint64_t len = 0;

			if (cl) {
				char num[24];
				size_t k = 0;

				cl += 17;
				while (*cl == ' ')
					cl++;
				while (k < sizeof(num) - 1 && cl[k] >= '0' && cl[k] <= '9') {
					num[k] = cl[k];
					k++;
				}
				num[k] = '\0';
				(void)parse_u64(num, &len);
			}
			need = (size_t)(end + 4 - resp) + (size_t)len;
			if (need >= sizeof(resp))
				goto broken;
			status = (unsigned)atoi(resp + 9);
		}
		if (have >= need)
			break;
	}
	if (strcasestr(resp, "\r\nConnection: close")) {
		close(*fd);
		*fd = -1;
	}
	return status;
broken:
	close(*fd);
	*fd = -1;
	return 0;
}

static void record_acked(uint64_t n)
{
	uint64_t now = __atomic_add_fetch(&acked_total, n, __ATOMIC_SEQ_CST);

	if (!o.acked_file)
		return;
	pthread_mutex_lock(&acked_lock);
	char tmp[512], txt[32];

	snprintf(tmp, sizeof(tmp), "%s.tmp", o.acked_file);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		int k = snprintf(txt, sizeof(txt), "%" PRIu64 "\n",
				 PROF_MAX(now, __atomic_load_n(&acked_total, __ATOMIC_SEQ_CST)));
		if (write(fd, txt, (size_t)k) == k)
			(void)rename(tmp, o.acked_file);
		close(fd);
	}
	pthread_mutex_unlock(&acked_lock);
}

/*
 * Offsets of the request's times in @b: the 8-byte little-endian words
 * holding a value from @base (the profile's time) to @base + --samples
 * (its samples'): the fixed64 time_unix_nano and timestamps_unix_nano,
 * docs/formats.md "OTLP profiles messages"; 8 other bytes match with probability 2^-56.
 */
static void find_times(const struct buf *b, int64_t base, struct time_offs *t)
{
	t->n = 0;
	for (size_t i = 0; i + 8 <= b->len; i++) {
		int64_t v;

		memcpy(&v, b->p + i, 8);
		if (v >= base && v <= base + (int64_t)o.samples) {
			VEC_PUSH(t, i);
			i += 7;
		}
	}
	t->base = base;
}

/* Move every time of @b found by find_times by (@now - the first one). */
static void restamp(struct buf *b, struct time_offs *t, int64_t now)
{
	int64_t delta = now - t->base;

	for (size_t i = 0; i < t->n; i++) {
		int64_t v;

		memcpy(&v, b->p + t->v[i], 8);
		v += delta;
		memcpy(b->p + t->v[i], &v, 8);
	}
	t->base = now;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	int64_t end = prof_now_ns() + (int64_t)o.seconds * 1000000000LL;
	struct buf body;
	int fd = -1;
	uint64_t seq = 0;
	int64_t req_t = 0; /* the request's time (pprof) */

	buf_init(&body, 0);
	/* One request per client, sent again and again: the client's CPU goes
	 * to the network, not to encoding (the server decodes each anew). Its
	 * times (fixed64 on the wire) are moved to the present before each
	 * send, so rows arrive in time order as an agent's do. */
	if (!replays.n) {
		int64_t t0 = build_request(c->id, seq, &body);

		req_t = t0;
		if (!o.pprof)
			find_times(&body, t0, &c->times);
	}
	while (prof_now_ns() < end) {
		if (c->times.n)
			restamp(&body, &c->times, prof_now_ns());
		else if (o.pprof && seq)
			req_t = build_request(c->id, seq,
					      &body); /* pprof's time is a varint: encoded anew */
		const struct replay *rp = replays.n ? &replays.v[(c->id + seq) % replays.n] : NULL;
		uint64_t rows = rp ? rp->rows : o.samples;

		for (;;) {
			int64_t t0 = prof_now_ns();
			unsigned st = post(&fd, rp ? &rp->body : &body, c->id, req_t);
			double ms = (double)(prof_now_ns() - t0) / 1e6;

			c->requests++;
			if (st == 200) {
				VEC_PUSH(&c->lat_ms, ms);
				c->acked += rows;
				c->acked_value += rp ? rp->value : 0;
				record_acked(rows);
				break;
			}
			if ((st == 429 || st == 503 || st == 0) && prof_now_ns() < end) {
				struct timespec ts = { 0, 20 * 1000000 };

				c->retries++;
				nanosleep(&ts, NULL);
				continue;
			}
			c->errors++;
			break;
		}
		seq++;
	}
	if (fd >= 0)
		close(fd);
	buf_release(&body);
	return NULL;
}

/* Read, count and gzip the --replay files; exits on a bad one. */
static void load_replays(void)
{
	for (size_t i = 0; i < replay_paths.n; i++) {
		struct replay r = { 0 };
		struct fmt_otlp_batch b;
		struct prof_err err;
		struct buf raw;
		char type[512];

		buf_init(&raw, 0);
		buf_init(&r.body, 0);
		prof_err_init(&err);
		if (buf_read_file(&raw, replay_paths.v[i]) ||
		    fmt_otlp_decode(raw.p ? raw.p : "", raw.len, 0, &b, &err)) {
			fprintf(stderr, "ingestload: --replay %s: cannot read or decode: %s\n",
				replay_paths.v[i], err.msg);
			exit(2);
		}
		for (size_t k = 0; k < b.n; k++) {
			const struct model_profile *p = &b.profiles[k];

			for (size_t t = 0; t < p->sample_types.n; t++) {
				bool check;

				model_profile_type_id(p, (uint32_t)t, type, sizeof(type));
				check = !strcmp(type, o.check_type);
				for (size_t j = 0; j < p->samples.n; j++) {
					int64_t v = p->values.v[p->samples.v[j].value_off + t];

					r.rows += v != 0;
					r.value += check ? (uint64_t)v : 0;
				}
			}
		}
		fmt_otlp_batch_release(&b);
		PROF_ASSERT(gzip_deflate(raw.p ? raw.p : "", raw.len, &r.body) == 0);
		buf_release(&raw);
		VEC_PUSH(&replays, r);
	}
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static unsigned uopt(const char *name, const char *v, unsigned lo, unsigned hi)
{
	uint64_t x;

	if (parse_u64(v, &x) || x < lo || x > hi) {
		fprintf(stderr, "ingestload: --%s: expected %u..%u, got '%s'\n", name, lo, hi, v);
		exit(2);
	}
	return (unsigned)x;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "samples", required_argument, NULL, 'n' },
		{ "stacks", required_argument, NULL, 'k' },
		{ "depth", required_argument, NULL, 'd' },
		{ "token", required_argument, NULL, 't' },
		{ "dataset", required_argument, NULL, 'D' },
		{ "service", required_argument, NULL, 'S' },
		{ "acked-file", required_argument, NULL, 'a' },
		{ "pprof", no_argument, NULL, 'P' },
		{ "parca", no_argument, NULL, 'Q' },
		{ "spread", required_argument, NULL, 'A' },
		{ "replay", required_argument, NULL, 'R' },
		{ "check-type", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct client *cl;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'H':
			o.host = optarg;
			break;
		case 'p':
			o.port = uopt("port", optarg, 1, 65535);
			break;
		case 'c':
			o.clients = uopt("clients", optarg, 1, 256);
			break;
		case 's':
			o.seconds = uopt("seconds", optarg, 1, 3600);
			break;
		case 'n':
			o.samples = uopt("samples", optarg, 1, 1000000);
			break;
		case 'k':
			o.stacks = uopt("stacks", optarg, 1, 10000);
			break;
		case 'd':
			o.depth = uopt("depth", optarg, 1, 64);
			break;
		case 't':
			o.token = optarg;
			break;
		case 'D':
			o.dataset = optarg;
			break;
		case 'S':
			o.service = optarg;
			break;
		case 'a':
			o.acked_file = optarg;
			break;
		case 'P':
			o.pprof = true;
			break;
		case 'Q':
			o.pprof = o.parca = true;
			break;
		case 'A':
			o.spread = uopt("spread", optarg, 1, 30 * 86400);
			break;
		case 'R':
			VEC_PUSH(&replay_paths, optarg);
			break;
		case 'T':
			o.check_type = optarg;
			break;
		default:
			fprintf(stderr, "usage: ingestload --port P [options]; see the source\n");
			return 2;
		}
	}
	if (!o.port) {
		fprintf(stderr, "ingestload: --port is required\n");
		return 2;
	}
	if (o.spread && !o.pprof) {
		fprintf(stderr, "ingestload: --spread goes with --pprof or --parca\n");
		return 2;
	}
	if (replay_paths.n && o.pprof) {
		fprintf(stderr, "ingestload: --replay sends OTLP; it does not go with --pprof\n");
		return 2;
	}
	load_replays();
	cl = xcalloc(o.clients, sizeof(*cl));
	int64_t t0 = prof_now_ns();
	for (unsigned i = 0; i < o.clients; i++) {
		cl[i].id = i;
		PROF_ASSERT(pthread_create(&cl[i].th, NULL, client_main, &cl[i]) == 0);
	}
	uint64_t req = 0, acked = 0, acked_value = 0, errs = 0, retries = 0, rbytes = 0;
	VEC(double) all = { 0 };
	for (unsigned i = 0; i < o.clients; i++) {
		pthread_join(cl[i].th, NULL);
		req += cl[i].requests;
		acked += cl[i].acked;
		acked_value += cl[i].acked_value;
		errs += cl[i].errors;
		retries += cl[i].retries;
		for (size_t k = 0; k < cl[i].lat_ms.n; k++)
			VEC_PUSH(&all, cl[i].lat_ms.v[k]);
		VEC_FREE(&cl[i].lat_ms);
		VEC_FREE(&cl[i].times);
	}
	double secs = (double)(prof_now_ns() - t0) / 1e9;
	if (all.n)
		qsort(all.v, all.n, sizeof(*all.v), dbl_cmp);
	double p50 = all.n ? all.v[all.n / 2] : 0, p99 = all.n ? all.v[all.n * 99 / 100] : 0;
	double mx = all.n ? all.v[all.n - 1] : 0;
	printf("{\"requests\":%" PRIu64 ",\"acked_requests\":%zu,\"acked_samples\":%" PRIu64
	       ",\"errors\":%" PRIu64 ",\"retries\":%" PRIu64 ",\"seconds\":%.2f,"
	       "\"requests_per_s\":%.1f,\"samples_per_s\":%.0f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
	       "\"max_ms\":%.2f,\"clients\":%u,\"samples_per_request\":%.1f",
	       req, all.n, acked, errs, retries, secs, (double)all.n / secs, (double)acked / secs,
	       p50, p99, mx, o.clients, all.n ? (double)acked / (double)all.n : (double)o.samples);
	for (size_t i = 0; i < replays.n; i++)
		rbytes += replays.v[i].body.len;
	if (replays.n)
		printf(",\"acked_value\":%" PRIu64 ",\"replay_bytes\":%" PRIu64, acked_value,
		       rbytes / replays.n);
	printf("}\n");
	VEC_FREE(&all);
	for (size_t i = 0; i < replays.n; i++)
		buf_release(&replays.v[i].body);
	VEC_FREE(&replays);
	VEC_FREE(&replay_paths);
	free(cl);
	return errs ? 1 : 0;
}
