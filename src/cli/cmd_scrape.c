// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_scrape.c - `profd scrape`: pull profiles without a local store and
 * send them on as OTLP/HTTP (scrape/push.h):
 *
 *   profd scrape --config scrape.yaml --forward URL      scrape jobs, forward
 *   profd scrape --target HOST:PORT ... --forward URL    one quick job
 *   profd scrape --watch 'GLOB' ... --server URL         file mode
 *
 * --server and --forward are the same thing (an OTLP/HTTP receiver: a
 * profd server or any collector); scraped profiles are queued (a slow
 * receiver never stalls scraping), watched files are sent synchronously
 * and recorded in DATA/scrape-watch.state only once acknowledged.
 * Runs until SIGINT/SIGTERM (signals are taken with sigwait in the main
 * thread), or with --once: one round per target and one poll of the
 * globs, then exit (1 when a file could not be sent).
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "scrape/config.h"
#include "scrape/push.h"
#include "scrape/scrape.h"
#include "scrape/watch.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd scrape (--config FILE | --target HOST:PORT... | --watch GLOB...)\n"
		"                    (--forward URL | --server URL) [options]\n"
		"\n"
		"  --config FILE        scrape_configs / watch_configs (Prometheus-style YAML)\n"
		"  --target HOST:PORT   scrape this Go net/http/pprof target (repeatable)\n"
		"  --watch GLOB         ingest each new profile file matching GLOB once (repeatable)\n"
		"  --forward URL        send as OTLP/HTTP to URL/v1development/profiles; stores nothing\n"
		"  --server URL         the same (a profd server's URL)\n"
		"  --job NAME           job label of --target / --watch (default pprof / files)\n"
		"  --interval DUR       --target scrape interval (default 10s)\n"
		"  --profiles LIST      --target profiles, comma-separated (default\n"
		"                       cpu,heap,allocs,mutex,block,goroutine)\n"
		"  --label KEY=VALUE    extra series label for --target / --watch (repeatable)\n"
		"  --data DIR           where file mode remembers what it sent (default ./data)\n"
		"  --token TOKEN        bearer token for the receiver (or $PROFD_TOKEN)\n"
		"  --dataset NAME       X-Profd-Dataset for the receiver\n"
		"  --ca-file FILE       trust the CA certificates in FILE (PEM) for an https://\n"
		"                       receiver instead of the system's\n"
		"  --cert-file FILE     client certificate (PEM) for a receiver that asks for one\n"
		"  --key-file FILE      its private key (PEM; default: in --cert-file)\n"
		"  --once               one scrape round / one poll, then exit\n"
		"  --log-level LEVEL    debug, info, warn or error (default info)\n");
}

struct args {
	const char *config, *url, *job, *profiles, *data, *token, *dataset;
	const char *ca_file, *cert_file, *key_file;
	VEC(char *) targets, watches, labels;
	int64_t interval_ns;
	bool once;
};

/*
 * Each --label KEY=VALUE into @ls; a name that is not a label name, or a
 * reserved "__" one, is -EINVAL with @err naming the option.
 */
static int add_labels(struct scrape_labels *ls, const struct args *a, struct prof_err *err)
{
	for (size_t i = 0; i < a->labels.n; i++) {
		const char *kv = a->labels.v[i], *eq = strchr(kv, '=');
		char *k = eq ? xstrndup(kv, (size_t)(eq - kv)) : NULL;
		bool ok = k && scrape_label_name_ok(k) && strncmp(k, "__", 2);

		if (ok)
			scrape_labels_set(ls, k, eq + 1);
		free(k);
		if (!ok)
			return prof_err_set(err, -EINVAL, -1,
					    "--label '%s': expected KEY=VALUE with a label name",
					    kv);
	}
	return 0;
}

static int add_quick_watch(struct scrape_config *c, const struct args *a, struct prof_err *err)
{
	struct scrape_watch_conf *w;

	c->watches = xreallocarray(c->watches, c->nwatches + 1, sizeof(*c->watches));
	w = &c->watches[c->nwatches++];
	memset(w, 0, sizeof(*w));
	w->name = xstrdup(a->job ? a->job : "files");
	w->files = xcalloc(a->watches.n, sizeof(char *));
	for (size_t i = 0; i < a->watches.n; i++)
		w->files[w->nfiles++] = xstrdup(a->watches.v[i]);
	w->poll_ns = SCRAPE_DEFAULT_POLL_NS;
	w->settle_ns = SCRAPE_DEFAULT_SETTLE_NS;
	w->max_file_size = SCRAPE_DEFAULT_BODY_LIMIT;
	return add_labels(&w->labels, a, err);
}

/* --label on the quick --target job: a static group label. */
static int add_target_labels(struct scrape_config *c, const struct args *a, struct prof_err *err)
{
	return add_labels(&c->jobs[c->njobs - 1].groups[0].labels, a, err);
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "target", required_argument, NULL, 't' },
		{ "watch", required_argument, NULL, 'w' },
		{ "forward", required_argument, NULL, 'f' },
		{ "server", required_argument, NULL, 's' },
		{ "job", required_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "profiles", required_argument, NULL, 'p' },
		{ "label", required_argument, NULL, 'l' },
		{ "data", required_argument, NULL, 'd' },
		{ "token", required_argument, NULL, 'T' },
		{ "dataset", required_argument, NULL, 'D' },
		{ "ca-file", required_argument, NULL, 1000 },
		{ "cert-file", required_argument, NULL, 1001 },
		{ "key-file", required_argument, NULL, 1002 },
		{ "once", no_argument, NULL, 'o' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			a->config = optarg;
			break;
		case 't':
			VEC_PUSH(&a->targets, optarg);
			break;
		case 'w':
			VEC_PUSH(&a->watches, optarg);
			break;
		case 'f':
		case 's':
			if (a->url && strcmp(a->url, optarg)) {
				fprintf(stderr, "profd scrape: give one --forward/--server URL\n");
				return 2;
			}
			a->url = optarg;
			break;
		case 'j':
			a->job = optarg;
			break;
		case 'i':
			if (parse_duration_ns(optarg, &a->interval_ns) || a->interval_ns <= 0) {
				fprintf(stderr,
					"profd scrape: --interval: expected a duration such "
					"as 10s, got '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'p':
			a->profiles = optarg;
			break;
		case 'l':
			VEC_PUSH(&a->labels, optarg);
			break;
		case 'd':
			a->data = optarg;
			break;
		case 'T':
			a->token = optarg;
			break;
		case 'D':
			a->dataset = optarg;
			break;
		case 'o':
			a->once = true;
			break;
		case 1000:
			a->ca_file = optarg;
			break;
		case 1001:
			a->cert_file = optarg;
			break;
		case 1002:
			a->key_file = optarg;
			break;
		case 'L':
			if (cli_set_log_level("scrape", optarg))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "profd scrape: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!a->config && !a->targets.n && !a->watches.n) {
		fprintf(stderr, "profd scrape: give --config, --target or --watch\n");
		usage(stderr);
		return 2;
	}
	if (!a->url) {
		fprintf(stderr, "profd scrape: give --forward URL (or --server URL): where to send "
				"the profiles\n");
		return 2;
	}
	return 0;
}

int cmd_scrape(int argc, char **argv)
{
	struct args a = { 0 };
	struct scrape_config conf = { 0 };
	struct scrape_push *fwd = NULL, *sync = NULL;
	struct scrape_mgr *mgr = NULL;
	struct scrape_watch *watch = NULL;
	struct scrape_sink sink;
	struct prof_err err;
	sigset_t sigs;
	int rc, status = 1;

	a.interval_ns = SCRAPE_DEFAULT_INTERVAL_NS;
	rc = parse_args(argc, argv, &a);
	if (rc) {
		VEC_FREE(&a.targets);
		VEC_FREE(&a.watches);
		VEC_FREE(&a.labels);
		return rc < 0 ? 0 : rc;
	}
	if (!a.token)
		a.token = getenv("PROFD_TOKEN");
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	prof_err_init(&err);
	rc = a.config ? scrape_config_load(a.config, 0, &conf, &err) : 0;
	if (!rc && a.targets.n) {
		rc = scrape_config_add_job(&conf, a.job ? a.job : "pprof", a.targets.v, a.targets.n,
					   a.interval_ns, a.profiles, &err);
		if (!rc)
			rc = add_target_labels(&conf, &a, &err);
	}
	if (!rc && a.watches.n)
		rc = add_quick_watch(&conf, &a, &err);
	if (rc) {
		fprintf(stderr, "profd scrape: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		status = 2;
		goto out;
	}
	struct scrape_push_opts po = { .url = a.url,
				       .token = a.token,
				       .dataset = a.dataset,
				       .ca_file = a.ca_file,
				       .cert_file = a.cert_file,
				       .key_file = a.key_file };

	if (conf.njobs) {
		po.async = true;
		rc = scrape_push_new(&po, &fwd, &err);
	}
	if (!rc && conf.nwatches) {
		po.async = false;
		rc = scrape_push_new(&po, &sync, &err);
	}
	if (!rc && conf.nwatches) {
		const char *dir = a.data ? a.data : "data";
		char *state;

		if (mkdir(dir, 0755) && errno != EEXIST) {
			rc = prof_err_set(&err, -errno, -1, "--data %s: %s", dir, strerror(errno));
		} else {
			state = xasprintf("%s/scrape-watch.state", dir);
			scrape_push_sink(sync, &sink);
			rc = scrape_watch_new(conf.watches, conf.nwatches, state, &sink, !a.once,
					      &watch, &err);
			free(state);
		}
	}
	if (!rc && conf.njobs) {
		scrape_push_sink(fwd, &sink);
		rc = scrape_mgr_new(&conf, &sink, a.once ? SCRAPE_ONCE : 0, &mgr, &err);
	}
	if (rc) {
		fprintf(stderr, "profd scrape: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		goto out;
	}
	log_info("scrape: running jobs=%zu watches=%zu forward=%s%s", conf.njobs, conf.nwatches,
		 a.url, a.once ? " once" : "");
	status = 0;
	if (a.once) {
		if (watch) {
			struct scrape_watch_result r;

			rc = scrape_watch_poll(watch, &r);
			printf("profd scrape: files ingested=%" PRIu64 " skipped=%" PRIu64
			       " unsettled=%" PRIu64 " bad=%" PRIu64 " failed=%" PRIu64 "\n",
			       r.ingested, r.skipped, r.unsettled, r.bad, r.failed);
			if (rc || r.failed)
				status = 1;
		}
		if (mgr)
			scrape_mgr_wait(mgr);
	} else {
		int sig;

		do {
			rc = sigwait(&sigs, &sig);
		} while (rc == EINTR);
		log_info("scrape: %s received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	}
out:
	if (mgr) {
		struct scrape_stats st;

		scrape_mgr_get_stats(mgr, &st);
		if (a.once)
			printf("profd scrape: targets=%" PRIu64 " up=%" PRIu64 " down=%" PRIu64
			       " profiles=%" PRIu64 " samples=%" PRIu64 "\n",
			       st.targets, st.targets_up, st.targets_down, st.profiles_stored,
			       st.samples_stored);
		if (st.targets_down && a.once)
			status = 1;
	}
	scrape_mgr_free(mgr);
	scrape_watch_free(watch);
	if (fwd && a.once) {
		/* Wait (up to 10 s) for the queue to drain so the exit status can tell. */
		struct scrape_push_stats ps;

		for (int i = 0; i < 100; i++) {
			struct timespec ts = { 0, 100 * 1000000 };

			scrape_push_get_stats(fwd, &ps);
			if (!ps.queued)
				break;
			nanosleep(&ts, NULL);
		}
		scrape_push_get_stats(fwd, &ps);
		printf("profd scrape: forwarded requests=%" PRIu64 " queued=%" PRIu64
		       " dropped=%" PRIu64 "\n",
		       ps.sent, ps.queued, ps.dropped);
		if (ps.queued || ps.dropped)
			status = 1;
	}
	scrape_push_free(fwd, 10000);
	scrape_push_free(sync, 0);
	scrape_config_release(&conf);
	VEC_FREE(&a.targets);
	VEC_FREE(&a.watches);
	VEC_FREE(&a.labels);
	fflush(stdout);
	return status;
}
