// SPDX-License-Identifier: Apache-2.0
/* store.c - data directory, WAL replay into the head, ingest; see store.h. */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "store/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct store {
	char *dir;
	int lock_fd;
	struct store_wal *wal;
	struct store_head *head;
};

/* Decode and check an OTLP request; on success @batch holds the profiles. */
static int decode_otlp(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *batch,
		       uint64_t *nsamples, struct prof_err *err)
{
	int rc;

	memset(batch, 0, sizeof(*batch));
	*nsamples = 0;
	rc = fmt_otlp_decode(data, n, max_samples, batch, err);
	if (rc) {
		if (!err || !err->code)
			prof_err_set(err, rc, -1, "otlp: %s", prof_strerror(rc));
		return rc;
	}
	for (size_t i = 0; i < batch->n; i++) {
		rc = model_profile_validate(&batch->profiles[i], err);
		if (!rc)
			rc = store_head_check(&batch->profiles[i], err);
		if (rc) {
			fmt_otlp_batch_release(batch);
			return rc;
		}
		*nsamples += batch->profiles[i].samples.n;
	}
	return 0;
}

static int replay_record(void *arg, const struct store_wal_record *rec, struct prof_err *err)
{
	struct store *s = arg;
	struct fmt_otlp_batch batch;
	uint64_t nsamples;
	int rc;

	if (rec->type != STORE_WAL_OTLP)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "unknown record type %u",
				    rec->type);
	rc = decode_otlp(rec->payload, rec->len, 0, &batch, &nsamples, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < batch.n && !rc; i++)
		rc = store_head_add(s->head, &batch.profiles[i], rec->time_ns, err);
	fmt_otlp_batch_release(&batch);
	return rc;
}

int store_open(const char *dir, struct store **out, struct prof_err *err)
{
	struct store *s;
	char *path;
	int rc;

	*out = NULL;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "store: cannot create %s: %s", dir,
				    strerror(errno));
	s = xcalloc(1, sizeof(*s));
	s->dir = xstrdup(dir);
	path = xasprintf("%s/LOCK", dir);
	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (s->lock_fd < 0) {
		rc = prof_err_set(err, -errno, -1, "store: cannot open %s: %s", path,
				  strerror(errno));
		free(path);
		goto fail;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
		rc = prof_err_set(err, errno == EWOULDBLOCK ? -EBUSY : -errno, -1,
				  "store: %s is in use by another profd process", dir);
		free(path);
		goto fail;
	}
	free(path);

	s->head = store_head_new();
	path = xasprintf("%s/wal", dir);
	rc = store_wal_open(path, replay_record, s, &s->wal, err);
	free(path);
	if (rc)
		goto fail;

	struct store_wal_stats ws;
	struct store_head_stats hs;
	store_wal_get_stats(s->wal, &ws);
	store_head_get_stats(s->head, &hs);
	log_info("store: opened dir=%s wal_records=%" PRIu64 " skipped=%" PRIu64
		 " dropped_bytes=%" PRIu64 " series=%" PRIu64 " rows=%" PRIu64 " stacks=%" PRIu64
		 " locations=%" PRIu64,
		 dir, ws.replayed, ws.skipped, ws.dropped_bytes, hs.series, hs.rows, hs.stack_nodes,
		 hs.locations);
	*out = s;
	return 0;
fail:
	store_close(s);
	return rc;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	store_wal_close(s->wal);
	store_head_free(s->head);
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	free(s->dir);
	free(s);
}

int store_ingest_otlp(struct store *s, const void *data, size_t n, size_t max_samples,
		      struct store_ingest_result *res, struct prof_err *err)
{
	struct fmt_otlp_batch batch;
	uint64_t nsamples;
	int64_t now = prof_now_ns();
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	rc = decode_otlp(data, n, max_samples, &batch, &nsamples, err);
	if (rc)
		return rc;
	if (batch.n == 0 || nsamples == 0) {
		fmt_otlp_batch_release(&batch);
		return 0; /* OTLP: an empty request is a success */
	}
	/* The log keeps the request bytes as received: lossless, and replay
	 * benefits from every later improvement of the decoder. */
	rc = store_wal_append(s->wal, STORE_WAL_OTLP, now, data, n, err);
	for (size_t i = 0; i < batch.n && !rc; i++)
		rc = store_head_add(s->head, &batch.profiles[i], now, err);
	if (!rc && res) {
		res->profiles = batch.n;
		res->samples = nsamples;
	}
	fmt_otlp_batch_release(&batch);
	return rc;
}

struct store_head *store_get_head(struct store *s)
{
	return s->head;
}

struct store_wal *store_get_wal(struct store *s)
{
	return s->wal;
}
