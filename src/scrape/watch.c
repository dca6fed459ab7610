// SPDX-License-Identifier: Apache-2.0
/*
 * watch.c - file mode with a durable "already ingested" state; see watch.h.
 *
 * In memory the state is a vector of entries with two open-addressing
 * indexes (path hash -> entry, content hash -> entry); on disk an
 * append-only text log compacted at open and when it is mostly stale.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/detect.h"
#include "scrape/watch.h"

#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define STATE_HEADER "# profd watch state v1\n"
#define NS_PER_S     ((int64_t)1000000000)

enum entry_status { ST_OK, ST_DUP, ST_BAD };

struct entry {
	char *path;
	uint64_t hash; /* content */
	uint64_t size;
	int64_t mtime_ns;
	enum entry_status status;
	bool seen, live;
};

/* u64 -> entry index, open addressing; key 0 = empty (hashes of 0 become 1). */
struct index {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap, n;
};

struct scrape_watch {
	const struct scrape_watch_conf *conf;
	size_t nconf;
	struct scrape_sink sink;
	char *state_path;
	int fd; /* the state log, O_APPEND */
	VEC(struct entry) e;
	struct index by_path, by_hash;
	size_t lines; /* lines in the state file */
	char host[256];
	struct scrape_watch_result totals;
	pthread_mutex_t lock; /* totals, stop */
	pthread_cond_t cond;
	pthread_t th;
	bool started, stop;
};

static uint64_t h64(const void *p, size_t n)
{
	uint64_t h = XXH3_64bits(p, n);

	return h ? h : 1;
}

static void index_release(struct index *x)
{
	free(x->keys);
	free(x->vals);
	memset(x, 0, sizeof(*x));
}

static void index_put(struct index *x, uint64_t key, uint32_t val);

static void index_grow(struct index *x)
{
	struct index old = *x;

	x->cap = old.cap ? old.cap * 2 : 64;
	x->n = 0;
	x->keys = xcalloc(x->cap, sizeof(*x->keys));
	x->vals = xcalloc(x->cap, sizeof(*x->vals));
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			index_put(x, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

/* Insert or overwrite. Several entries may share a content hash: the last wins. */
static void index_put(struct index *x, uint64_t key, uint32_t val)
{
	size_t i;

	if ((x->n + 1) * 2 > x->cap)
		index_grow(x);
	i = (size_t)key & (x->cap - 1);
	while (x->keys[i] && x->keys[i] != key)
		i = (i + 1) & (x->cap - 1);
	if (!x->keys[i])
		x->n++;
	x->keys[i] = key;
	x->vals[i] = val;
}

static bool index_get(const struct index *x, uint64_t key, uint32_t *val)
{
	size_t i;

	if (!x->cap)
		return false;
	i = (size_t)key & (x->cap - 1);
	while (x->keys[i]) {
		if (x->keys[i] == key) {
			*val = x->vals[i];
			return true;
		}
		i = (i + 1) & (x->cap - 1);
	}
	return false;
}

static struct entry *find_path(struct scrape_watch *w, const char *path)
{
	uint32_t i;

	if (!index_get(&w->by_path, h64(path, strlen(path)), &i))
		return NULL;
	return w->e.v[i].live && !strcmp(w->e.v[i].path, path) ? &w->e.v[i] : NULL;
}

/* Is @hash's content ingested (ok) under some live entry? */
static bool hash_ingested(struct scrape_watch *w, uint64_t hash)
{
	uint32_t i;

	return index_get(&w->by_hash, hash, &i) && w->e.v[i].live && w->e.v[i].hash == hash &&
	       w->e.v[i].status == ST_OK;
}

static const char *status_name(enum entry_status s)
{
	return s == ST_OK ? "ok" : s == ST_DUP ? "dup" : "bad";
}

/* Set (add or replace) the entry of @path in memory. */
static struct entry *entry_set(struct scrape_watch *w, const char *path, uint64_t hash,
			       uint64_t size, int64_t mtime_ns, enum entry_status st)
{
	struct entry *e = find_path(w, path);

	if (!e) {
		struct entry ne = { 0 };

		ne.path = xstrdup(path);
		ne.live = true;
		VEC_PUSH(&w->e, ne);
		e = &w->e.v[w->e.n - 1];
		index_put(&w->by_path, h64(path, strlen(path)), (uint32_t)(w->e.n - 1));
	}
	e->hash = hash;
	e->size = size;
	e->mtime_ns = mtime_ns;
	e->status = st;
	e->seen = true;
	if (st == ST_OK)
		index_put(&w->by_hash, hash, (uint32_t)(e - w->e.v));
	return e;
}

static int format_entry(struct buf *b, const struct entry *e)
{
	return buf_addf(b, "%s %016" PRIx64 " %" PRIu64 " %" PRId64 " %s\n", status_name(e->status),
			e->hash, e->size, e->mtime_ns, e->path);
}

/* Append @e to the state log and make it durable. */
static int state_append(struct scrape_watch *w, const struct entry *e)
{
	struct buf b;
	int rc = 0;

	buf_init(&b, 0);
	(void)format_entry(&b, e);
	if (write(w->fd, b.p, b.len) != (ssize_t)b.len || fdatasync(w->fd))
		rc = -errno ? -errno : -EIO;
	buf_release(&b);
	if (rc)
		log_error("scrape watch: cannot append to %s: %s", w->state_path,
			  prof_strerror(rc));
	else
		w->lines++;
	return rc;
}

/* Rewrite the state with the live entries only; reopen the log. */
static int state_compact(struct scrape_watch *w, struct prof_err *err)
{
	struct buf b;
	size_t live = 0;
	int rc;

	buf_init(&b, 0);
	(void)buf_addstr(&b, STATE_HEADER);
	for (size_t i = 0; i < w->e.n; i++)
		if (w->e.v[i].live) {
			(void)format_entry(&b, &w->e.v[i]);
			live++;
		}
	rc = buf_write_file(w->state_path, b.p, b.len);
	buf_release(&b);
	if (rc)
		return prof_err_set(err, rc, -1, "%s: cannot write: %s", w->state_path,
				    prof_strerror(rc));
	if (w->fd >= 0)
		close(w->fd);
	w->fd = open(w->state_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (w->fd < 0)
		return prof_err_set(err, -errno, -1, "%s: %s", w->state_path, strerror(errno));
	w->lines = live;
	/* Drop dead entries from memory and rebuild the indexes. */
	size_t j = 0;

	for (size_t i = 0; i < w->e.n; i++) {
		if (w->e.v[i].live)
			w->e.v[j++] = w->e.v[i];
		else
			free(w->e.v[i].path);
	}
	w->e.n = j;
	index_release(&w->by_path);
	index_release(&w->by_hash);
	for (size_t i = 0; i < w->e.n; i++) {
		index_put(&w->by_path, h64(w->e.v[i].path, strlen(w->e.v[i].path)), (uint32_t)i);
		if (w->e.v[i].status == ST_OK)
			index_put(&w->by_hash, w->e.v[i].hash, (uint32_t)i);
	}
	return 0;
}

/* One line "status hash size mtime path"; false when malformed. */
static bool parse_line(struct scrape_watch *w, char *line)
{
	char *f[4], *path;
	uint64_t hash, size;
	int64_t mtime;
	enum entry_status st;
	char *p = line;

	for (int i = 0; i < 4; i++) {
		char *sp = strchr(p, ' ');

		if (!sp)
			return false;
		*sp = '\0';
		f[i] = p;
		p = sp + 1;
	}
	path = p;
	if (!strcmp(f[0], "ok"))
		st = ST_OK;
	else if (!strcmp(f[0], "dup"))
		st = ST_DUP;
	else if (!strcmp(f[0], "bad"))
		st = ST_BAD;
	else
		return false;
	if (strlen(f[1]) != 16)
		return false;
	hash = 0;
	for (int i = 0; i < 16; i++) {
		char c = f[1][i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (v < 0)
			return false;
		hash = hash << 4 | (uint64_t)v;
	}
	if (parse_u64(f[2], &size) || parse_i64(f[3], &mtime) || !*path || path[0] != '/')
		return false;
	entry_set(w, path, hash, size, mtime, st);
	return true;
}

static int state_load(struct scrape_watch *w, struct prof_err *err)
{
	struct buf b;
	size_t bad = 0, lineno = 0;
	int rc;

	buf_init(&b, (size_t)1 << 30);
	rc = buf_read_file(&b, w->state_path);
	if (rc == -ENOENT) {
		buf_release(&b);
		return 0;
	}
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "%s: %s", w->state_path, prof_strerror(rc));
	}
	for (char *s = b.p, *end = b.p + b.len; s && s < end;) {
		char *nl = memchr(s, '\n', (size_t)(end - s));

		if (!nl)
			break; /* a torn last line: the append that wrote it did not finish */
		*nl = '\0';
		lineno++;
		if (*s && *s != '#' && !parse_line(w, s)) {
			if (bad++ < 5)
				log_warn("scrape watch: %s:%zu: malformed line skipped",
					 w->state_path, lineno);
		}
		s = nl + 1;
	}
	buf_release(&b);
	return 0;
}

static void *watch_main(void *arg);

int scrape_watch_new(const struct scrape_watch_conf *c, size_t n, const char *state_path,
		     const struct scrape_sink *sink, bool thread, struct scrape_watch **out,
		     struct prof_err *err)
{
	struct scrape_watch *w = xcalloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	w->conf = c;
	w->nconf = n;
	w->sink = *sink;
	w->state_path = xstrdup(state_path);
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (gethostname(w->host, sizeof(w->host) - 1) || !w->host[0])
		snprintf(w->host, sizeof(w->host), "localhost");
	rc = state_load(w, err);
	if (!rc)
		rc = state_compact(w, err);
	if (!rc && thread) {
		rc = -pthread_create(&w->th, NULL, watch_main, w);
		if (rc)
			prof_err_set(err, rc, -1, "scrape watch: cannot start a thread");
		else
			w->started = true;
	}
	if (rc) {
		scrape_watch_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

static bool name_has(const char *path, const char *word)
{
	const char *base = strrchr(path, '/');

	return strstr(base ? base + 1 : path, word) != NULL;
}

/* Decode @data and hand it to the sink. 1 = bad input, 0 = stored, <0 = sink failed. */
static int ingest(struct scrape_watch *w, const struct scrape_watch_conf *c, const char *path,
		  const struct buf *data, int64_t mtime_ns, uint64_t *samples)
{
	struct fmt_decode_opts o = { .max_input = c->max_file_size };
	struct model_profile p, *pp = &p;
	struct prof_err err;
	int rc;

	model_profile_init(&p);
	prof_err_init(&err);
	rc = fmt_decode_any(data->p, data->len, path, &o, &p, &err);
	if (rc) {
		log_warn("scrape watch: %s: cannot decode: %s", path,
			 err.msg[0] ? err.msg : prof_strerror(rc));
		model_profile_release(&p);
		return 1;
	}
	if (!p.name) {
		if (name_has(path, "mutex"))
			p.name = model_intern(&p, "mutex");
		else if (name_has(path, "block"))
			p.name = model_intern(&p, "block");
	}
	if (!p.time_ns)
		p.time_ns = mtime_ns;
	model_attr_add_str(&p, "job", c->name);
	if (!scrape_labels_get(&c->labels, "instance"))
		model_attr_add_str(&p, "instance", w->host);
	for (size_t i = 0; i < c->labels.l.n; i++)
		model_attr_add_str(&p, c->labels.l.v[i].name, c->labels.l.v[i].value);
	*samples = p.samples.n;
	prof_err_init(&err);
	rc = p.samples.n ? w->sink.submit(w->sink.arg, c->dataset, &pp, 1, &err) : 0;
	if (rc)
		log_warn("scrape watch: %s: not stored (retried next poll): %s", path,
			 err.msg[0] ? err.msg : prof_strerror(rc));
	model_profile_release(&p);
	return rc < 0 ? rc : 0;
}

static void poll_file(struct scrape_watch *w, const struct scrape_watch_conf *c, const char *path,
		      struct scrape_watch_result *r, int *state_rc)
{
	struct entry *e = find_path(w, path);
	struct stat st;
	int64_t mtime_ns, now = prof_now_ns();
	struct buf data;
	uint64_t hash, samples = 0;
	int rc;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	if (e)
		e->seen = true;
	mtime_ns = (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec;
	if (e && e->size == (uint64_t)st.st_size && e->mtime_ns == mtime_ns) {
		r->skipped++;
		return;
	}
	if (strchr(path, '\n') || path[0] != '/') {
		if (!e || e->status != ST_BAD)
			log_warn("scrape watch: refusing a path with a line break or not absolute");
		return;
	}
	if (now - mtime_ns < c->settle_ns) {
		r->unsettled++;
		return;
	}
	if ((uint64_t)st.st_size > c->max_file_size) {
		log_warn("scrape watch: %s: %lld bytes exceeds max_file_size (%zu); skipped", path,
			 (long long)st.st_size, c->max_file_size);
		e = entry_set(w, path, 0, (uint64_t)st.st_size, mtime_ns, ST_BAD);
		r->bad++;
		rc = state_append(w, e);
		*state_rc = *state_rc ? *state_rc : rc;
		return;
	}
	buf_init(&data, c->max_file_size);
	rc = buf_read_file(&data, path);
	if (rc) {
		if (rc != -ENOENT)
			log_warn("scrape watch: %s: %s", path, prof_strerror(rc));
		buf_release(&data);
		return;
	}
	hash = h64(data.p ? data.p : "", data.len);
	if ((e && e->hash == hash) || hash_ingested(w, hash)) {
		/* Same content: a touch, a rename or a copy. Remember the new stat. */
		e = entry_set(w, path, hash, (uint64_t)st.st_size, mtime_ns,
			      e && e->hash == hash ? e->status : ST_DUP);
		r->skipped++;
		buf_release(&data);
		rc = state_append(w, e);
		*state_rc = *state_rc ? *state_rc : rc;
		return;
	}
	rc = ingest(w, c, path, &data, mtime_ns, &samples);
	buf_release(&data);
	if (rc < 0) {
		r->failed++;
		return;
	}
	e = entry_set(w, path, hash, (uint64_t)st.st_size, mtime_ns, rc ? ST_BAD : ST_OK);
	if (rc) {
		r->bad++;
	} else {
		r->ingested++;
		r->samples += samples;
		log_info("scrape watch: ingested %s samples=%" PRIu64, path, samples);
	}
	rc = state_append(w, e);
	*state_rc = *state_rc ? *state_rc : rc;
}

int scrape_watch_poll(struct scrape_watch *w, struct scrape_watch_result *res)
{
	struct scrape_watch_result r = { 0 };
	size_t dead = 0;
	int state_rc = 0;

	for (size_t i = 0; i < w->e.n; i++)
		w->e.v[i].seen = false;
	for (size_t k = 0; k < w->nconf; k++) {
		const struct scrape_watch_conf *c = &w->conf[k];

		for (size_t p = 0; p < c->nfiles; p++) {
			glob_t gl;

			if (glob(c->files[p], 0, NULL, &gl))
				continue;
			for (size_t g = 0; g < gl.gl_pathc; g++) {
				char *abs = gl.gl_pathv[g][0] == '/'
						    ? NULL
						    : realpath(gl.gl_pathv[g], NULL);

				poll_file(w, c, abs ? abs : gl.gl_pathv[g], &r, &state_rc);
				free(abs);
				pthread_mutex_lock(&w->lock);
				bool stop = w->stop;
				pthread_mutex_unlock(&w->lock);
				if (stop)
					break;
			}
			globfree(&gl);
		}
	}
	/* Forget files that are gone (not those we merely could not list). */
	for (size_t i = 0; i < w->e.n; i++) {
		struct entry *e = &w->e.v[i];
		struct stat st;

		if (!e->live || e->seen)
			continue;
		if (stat(e->path, &st) && errno == ENOENT) {
			e->live = false;
			dead++;
		}
	}
	if (dead || w->lines > 2 * w->e.n + 64) {
		struct prof_err err;
		size_t live = 0;

		for (size_t i = 0; i < w->e.n; i++)
			live += w->e.v[i].live;
		if (w->lines > 2 * live + 64) {
			prof_err_init(&err);
			if (state_compact(w, &err))
				log_error("scrape watch: %s", err.msg);
		}
	}
	pthread_mutex_lock(&w->lock);
	w->totals.ingested += r.ingested;
	w->totals.samples += r.samples;
	w->totals.skipped += r.skipped;
	w->totals.unsettled += r.unsettled;
	w->totals.bad += r.bad;
	w->totals.failed += r.failed;
	pthread_mutex_unlock(&w->lock);
	if (res)
		*res = r;
	return state_rc;
}

void scrape_watch_get_totals(struct scrape_watch *w, struct scrape_watch_result *res)
{
	pthread_mutex_lock(&w->lock);
	*res = w->totals;
	pthread_mutex_unlock(&w->lock);
}

static void *watch_main(void *arg)
{
	struct scrape_watch *w = arg;
	int64_t poll = INT64_MAX;

	for (size_t i = 0; i < w->nconf; i++)
		poll = PROF_MIN(poll, w->conf[i].poll_ns);
	if (poll == INT64_MAX)
		poll = SCRAPE_DEFAULT_POLL_NS;
	for (;;) {
		struct timespec ts;

		(void)scrape_watch_poll(w, NULL);
		pthread_mutex_lock(&w->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(poll / NS_PER_S);
		ts.tv_nsec += (long)(poll % NS_PER_S);
		if (ts.tv_nsec >= NS_PER_S) {
			ts.tv_sec++;
			ts.tv_nsec -= NS_PER_S;
		}
		if (!w->stop)
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		bool stop = w->stop;
		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
	}
	return NULL;
}

void scrape_watch_free(struct scrape_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->started)
		pthread_join(w->th, NULL);
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->e.n; i++)
		free(w->e.v[i].path);
	VEC_FREE(&w->e);
	index_release(&w->by_path);
	index_release(&w->by_hash);
	free(w->state_path);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}
