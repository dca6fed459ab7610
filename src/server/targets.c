// SPDX-License-Identifier: Apache-2.0
/*
 * targets.c - the server's side of scraping (scrape/scrape.h,
 * scrape/watch.h): start the scrape manager and the file watcher with a
 * sink into the server's own ingest path (pipeline.h: limits, signal
 * control, WAL fsync, usage counters, all as for a pushed profile), stop
 * them before the stores close, and answer
 *
 *   GET /api/v1/targets   the health of every scrape target (Prometheus'
 *                         shape, scrape_mgr_targets_json); needs the
 *                         query permission on some dataset.
 *
 * Scraped profiles go to the dataset their job names (`dataset:`), else
 * the default dataset. File mode remembers what it ingested in
 * DATA_DIR/scrape-watch.state. server_stop stops scraping before it
 * closes the stores, so the last scrapes and the self profiler's last
 * samples are still stored during shutdown.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "scrape/scrape.h"
#include "scrape/selfprof.h"
#include "scrape/watch.h"
#include "server/pipeline.h"
#include "server/route.h"

static int sink_submit(void *arg, const char *dataset, struct model_profile *const *p, size_t n,
		       struct prof_err *err)
{
	struct server *srv = arg;
	const char *name = dataset ? dataset : srv->conf->default_dataset;
	struct server_dataset *ds = server_tenants_find(&srv->tenants, name);
	struct server_ingest_out out = { 0 };

	if (!ds)
		return prof_err_set(err, -PROF_ENOTFOUND, -1,
				    "dataset '%s' is not configured on this server", name);
	if (!server_ingest_profiles(srv, ds, p, n, NULL, 0, NULL, "scrape", &out))
		return prof_err_set(err, -EIO, -1, "%s", out.msg);
	return 0;
}

int server_scrape_start(struct server *srv, const struct server_config *cfg, struct prof_err *err)
{
	struct scrape_sink sink = { sink_submit, srv };
	const struct scrape_config *sc = cfg->scrape;
	int rc = 0;

	if (sc && sc->njobs)
		rc = scrape_mgr_new(sc, &sink, 0, &srv->scrape, err);
	if (!rc && sc && sc->nwatches) {
		char *state =
			xasprintf("%s/scrape-watch.state", cfg->data_dir ? cfg->data_dir : "data");

		rc = scrape_watch_new(sc->watches, sc->nwatches, state, &sink, true, &srv->watch,
				      err);
		free(state);
	}
	if (!rc && cfg->self_profile)
		rc = scrape_selfprof_new(cfg->self_profile_hz, &sink, &srv->selfprof, err);
	if (!rc && sc)
		log_info("server: scraping jobs=%zu watches=%zu", sc->njobs, sc->nwatches);
	return rc;
}

void server_scrape_stop(struct server *srv)
{
	scrape_selfprof_free(srv->selfprof);
	srv->selfprof = NULL;
	scrape_watch_free(srv->watch);
	srv->watch = NULL;
	scrape_mgr_free(srv->scrape);
	srv->scrape = NULL;
}

/* Any dataset the caller may query will do: targets are not per dataset. */
void server_handle_targets(struct server_req *rq, struct server_reply *rp)
{
	if (!server_req_store(rq, SERVER_PERM_QUERY, rp))
		return;
	rp->status = 200;
	rp->content_type = "application/json";
	rp->cache = "no-store";
	buf_reset(&rp->body);
	if (!rq->srv->scrape) {
		(void)buf_addstr(&rp->body,
				 "{\"status\":\"success\",\"data\":{\"activeTargets\":[],"
				 "\"droppedTargets\":[]}}\n");
		return;
	}
	if (scrape_mgr_targets_json(rq->srv->scrape, &rp->body))
		server_reply_json_error(rp, 500, "the target list does not fit in a reply");
}
