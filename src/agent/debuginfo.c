// SPDX-License-Identifier: Apache-2.0
/* debuginfo.c - the agent's debuginfo uploader; see debuginfo.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/curl_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/debuginfo.h"
#include "symbolize/elf.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DI_PATH		     "/api/v1/debuginfo/"
#define DI_DEFAULT_MAX_FILE  (1ull << 30)
#define DI_DEFAULT_RATE	     (4ull << 20)
#define DI_DEFAULT_PER_MIN   30u
#define DI_DEFAULT_QUEUE     64u
#define DI_DEFAULT_KNOWN     4096u
#define DI_DEFAULT_TIMEOUT   30000L
#define DI_MAX_REPLY	     512 /* bytes of an answer kept for the log */
#define DI_ID_MAX	     129 /* hex of up to 64 bytes, NUL-terminated */
#define DI_DEFAULT_DEBUG_DIR "/usr/lib/debug"

enum di_state {
	DI_EMPTY = 0,
	DI_QUEUED, /* waiting or being handled */
	DI_DONE,   /* present, uploaded or skipped for good */
	DI_FAILED, /* transient failure: again after retry_at */
};

/* One remembered build ID, by a 64-bit hash of its hex (build IDs are hashes themselves). */
struct di_known {
	uint64_t key; /* 0 = empty slot */
	int64_t retry_at_ns;
	uint8_t state;
};

struct di_item {
	char id[DI_ID_MAX];
	char *path; /* owned */
	uint32_t pid;
};

enum di_outcome { DI_OUT_DONE, DI_OUT_FAILED };

struct agent_debuginfo {
	struct agent_debuginfo_opts o;
	char *base;		    /* server_url + DI_PATH */
	char *auth_hdr;		    /* "Authorization: Bearer ..." or NULL */
	char *dataset_hdr;	    /* "X-Profd-Dataset: ..." or NULL */
	char *ca_file;		    /* CA certificates (PEM) for TLS, or NULL: the system's */
	char *cert_file, *key_file; /* client certificate and key (PEM), or NULL */
	char *proc_root, *debug_dir;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool thread_started;
	/* under mu: */
	bool stopping;
	struct di_known *known; /* open addressing, nknown_slots (a power of two) */
	size_t nknown_slots, nknown;
	struct di_item *queue; /* ring of o.max_queue */
	size_t qhead, qn;
	struct agent_debuginfo_stats st;
	/* uploader thread only: */
	double tokens; /* files-per-minute bucket */
	int64_t tokens_at_ns;
};

static int64_t di_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* FNV-1a of @s, never 0. */
static uint64_t di_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* The slot for @key: its own, or the empty one where it would go. Under mu. */
static struct di_known *di_slot(struct agent_debuginfo *d, uint64_t key)
{
	size_t mask = d->nknown_slots - 1, i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 20) & mask;

	while (d->known[i].key && d->known[i].key != key)
		i = (i + 1) & mask;
	return &d->known[i];
}

static bool di_valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 2 || n >= DI_ID_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

void agent_debuginfo_offer(struct agent_debuginfo *d, const char *build_id, const char *path,
			   uint32_t pid)
{
	struct di_known *k;
	struct di_item *it;
	uint64_t key;

	if (!d || !build_id || !path || path[0] != '/' || !di_valid_id(build_id))
		return;
	key = di_hash(build_id);
	pthread_mutex_lock(&d->mu);
	k = di_slot(d, key);
	if (k->key && (k->state != DI_FAILED || di_mono_ns() < k->retry_at_ns))
		goto out; /* seen: queued, done, or failed recently */
	if (d->stopping || d->qn == d->o.max_queue || (!k->key && d->nknown >= d->o.max_known)) {
		d->st.dropped_full++; /* not remembered: offered again later */
		goto out;
	}
	if (!k->key) {
		k->key = key;
		d->nknown++;
	}
	k->state = DI_QUEUED;
	it = &d->queue[(d->qhead + d->qn) % d->o.max_queue];
	snprintf(it->id, sizeof(it->id), "%s", build_id);
	it->path = xstrdup(path);
	it->pid = pid;
	d->qn++;
	d->st.offered++;
	d->st.queued = d->qn;
	pthread_cond_signal(&d->cv);
out:
	pthread_mutex_unlock(&d->mu);
}

void agent_debuginfo_get_stats(struct agent_debuginfo *d, struct agent_debuginfo_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	*st = d->st;
	pthread_mutex_unlock(&d->mu);
}

#define DI_COUNT(d, field, n)                   \
	do {                                    \
		pthread_mutex_lock(&(d)->mu);   \
		(d)->st.field += (n);           \
		pthread_mutex_unlock(&(d)->mu); \
	} while (0)

static bool di_stopping(struct agent_debuginfo *d)
{
	bool s;

	pthread_mutex_lock(&d->mu);
	s = d->stopping;
	pthread_mutex_unlock(&d->mu);
	return s;
}

static size_t di_on_reply(char *p, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;

	if (b->len < DI_MAX_REPLY)
		buf_add(b, p, PROF_MIN(size * n, DI_MAX_REPLY - b->len));
	return size * n;
}

static size_t di_on_read(char *p, size_t size, size_t n, void *ud)
{
	return fread(p, size, n, ud) * size;
}

/* libcurl progress callback: abort the transfer once closing began. */
static int di_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			  curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return di_stopping(ud) ? 1 : 0;
}

/* A handle for @url with the common options; *@hdrs to free after perform. */
static CURL *di_curl(struct agent_debuginfo *d, const char *url, struct buf *reply,
		     struct curl_slist **hdrs)
{
	CURL *c = curl_easy_init();

	*hdrs = NULL;
	if (!c)
		return NULL;
	*hdrs = curl_slist_append(*hdrs, "Expect:");
	if (d->auth_hdr)
		*hdrs = curl_slist_append(*hdrs, d->auth_hdr);
	if (d->dataset_hdr)
		*hdrs = curl_slist_append(*hdrs, d->dataset_hdr);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (d->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, d->ca_file);
	if (d->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, d->cert_file);
	if (d->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, d->key_file);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "profd-agent");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, PROF_MIN(d->o.timeout_ms, 10000L));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, di_on_reply);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, di_on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, d);
	return c;
}

/* Keep log lines one line. */
static const char *di_reply_text(struct buf *b)
{
	char *nl;

	if (!b->p)
		return "";
	nl = memchr(b->p, '\n', b->len);
	if (nl)
		*nl = '\0';
	return b->p;
}

/* HEAD: the HTTP status, or 0 on a transport error (logged). */
static long di_head(struct agent_debuginfo *d, const char *url)
{
	struct curl_slist *hdrs;
	struct buf reply;
	long status = 0;
	CURLcode cc;
	CURL *c;

	buf_init(&reply, DI_MAX_REPLY + 1);
	c = di_curl(d, url, &reply, &hdrs);
	if (!c) {
		buf_release(&reply);
		return 0;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, d->o.timeout_ms);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		log_warn("agent debuginfo check failed url=%s error=\"%s\"", url,
			 curl_easy_strerror(cc));
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	buf_release(&reply);
	return status;
}

/*
 * The .gnu_debuglink of ELF file @path: the debug file's name (a plain
 * file name, no '/') into @name and its CRC-32 into *@crc. The section
 * holds the name, NUL-terminated, padded to 4 bytes, then the CRC in the
 * file's byte order (GDB manual, "Debugging Information in Separate
 * Files"). true when there is one.
 */
static bool di_debuglink(const char *path, char *name, size_t namesz, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	bool ok = false;
	size_t shstr;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	elf = elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstr))
		goto out;
	while (!ok && (scn = elf_nextscn(elf, scn))) {
		const char *sname, *d;
		Elf_Data *data;
		GElf_Ehdr eh;
		GElf_Shdr sh;
		size_t len, off;
		uint8_t c[4];

		if (!gelf_getshdr(scn, &sh) || !(sname = elf_strptr(elf, shstr, sh.sh_name)) ||
		    strcmp(sname, ".gnu_debuglink") || !(data = elf_getdata(scn, NULL)) ||
		    !data->d_buf || !gelf_getehdr(elf, &eh))
			continue;
		d = data->d_buf;
		len = strnlen(d, data->d_size);
		off = (len + 4) & ~(size_t)3;
		if (!len || len >= namesz || off + 4 > data->d_size || memchr(d, '/', len) ||
		    !strcmp(d, ".") || !strcmp(d, ".."))
			break;
		memcpy(name, d, len + 1);
		memcpy(c, d + off, 4);
		*crc = eh.e_ident[EI_DATA] == ELFDATA2MSB
			       ? (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 |
					 c[3]
			       : (uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 |
					 c[0];
		ok = true;
	}
out:
	elf_end(elf);
	close(fd);
	return ok;
}

/* Whether the CRC-32 (zlib's, as .gnu_debuglink uses) of regular file @path is @want. */
static bool di_crc_matches(const char *path, uint32_t want, uint64_t max_bytes)
{
	uint8_t buf[65536];
	struct stat st;
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max_bytes) {
		close(fd);
		return false;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	close(fd);
	return n == 0 && (uint32_t)crc == want;
}

/*
 * The debug file @it's mapped file names in its .gnu_debuglink, looked
 * for as GDB does (next to the file, in its .debug directory, under the
 * debug directory at the file's directory), under the process's root,
 * then on the host; its build ID must be @it->id and its CRC the link's.
 */
static bool di_find_linked(struct agent_debuginfo *d, const struct di_item *it, char *out,
			   size_t outsz)
{
	const char *slash = strrchr(it->path, '/');
	int dirlen = slash ? (int)(slash - it->path) : 0;
	char root[2][64], file[PATH_MAX + 64], c[PATH_MAX + 64], hex[DI_ID_MAX], link[256];
	uint32_t crc;

	snprintf(root[0], sizeof(root[0]), "%s/%u/root", d->proc_root, it->pid);
	root[1][0] = '\0';
	for (int r = 0; r < 2; r++) {
		snprintf(file, sizeof(file), "%s%s", root[r], it->path);
		if (!di_debuglink(file, link, sizeof(link), &crc))
			continue;
		for (int j = 0; j < 3; j++) {
			if (j == 0)
				snprintf(c, sizeof(c), "%s%.*s/%s", root[r], dirlen, it->path,
					 link);
			else if (j == 1)
				snprintf(c, sizeof(c), "%s%.*s/.debug/%s", root[r], dirlen,
					 it->path, link);
			else
				snprintf(c, sizeof(c), "%s%s%.*s/%s", root[r], d->debug_dir, dirlen,
					 it->path, link);
			if (sym_elf_read_build_id(c, hex, sizeof(hex)) || strcmp(hex, it->id) ||
			    !di_crc_matches(c, crc, d->o.max_file_bytes))
				continue;
			if (snprintf(out, outsz, "%s", c) >= (int)outsz)
				continue;
			return true;
		}
	}
	return false;
}

/*
 * The file to upload for @it into @out: a separate debug file found by
 * build ID, else one the mapped file's .gnu_debuglink names (its CRC
 * and build ID checked), else the mapped file (debuginfo.h, step 2); its
 * build ID must be @it->id. true when found; *@is_debug tells which.
 */
static bool di_find_file(struct agent_debuginfo *d, const struct di_item *it, char *out,
			 size_t outsz, bool *is_debug)
{
	char cand[4][PATH_MAX + 64], hex[DI_ID_MAX];

	snprintf(cand[0], sizeof(cand[0]), "%s/%u/root%s/.build-id/%.2s/%s.debug", d->proc_root,
		 it->pid, d->debug_dir, it->id, it->id + 2);
	snprintf(cand[1], sizeof(cand[1]), "%s/.build-id/%.2s/%s.debug", d->debug_dir, it->id,
		 it->id + 2);
	snprintf(cand[2], sizeof(cand[2]), "%s/%u/root%s", d->proc_root, it->pid, it->path);
	snprintf(cand[3], sizeof(cand[3]), "%s", it->path);
	for (int i = 0; i < 4; i++) {
		if (i == 2 && di_find_linked(d, it, out, outsz)) {
			*is_debug = true;
			return true;
		}
		if (sym_elf_read_build_id(cand[i], hex, sizeof(hex)) || strcmp(hex, it->id))
			continue;
		if (snprintf(out, outsz, "%s", cand[i]) >= (int)outsz)
			continue;
		*is_debug = i < 2;
		return true;
	}
	return false;
}

/* Wait for a token of the files-per-minute bucket; false when closing began. */
static bool di_take_token(struct agent_debuginfo *d)
{
	double per_ns = (double)d->o.max_files_per_min / 60e9;
	int64_t now = di_mono_ns();
	bool waited = false;

	d->tokens = PROF_MIN((double)d->o.max_files_per_min,
			     d->tokens + (double)(now - d->tokens_at_ns) * per_ns);
	d->tokens_at_ns = now;
	while (d->tokens < 1.0) {
		int64_t wait_ns = (int64_t)((1.0 - d->tokens) / per_ns) + 1;
		struct timespec until;

		if (!waited)
			DI_COUNT(d, rate_limited, 1);
		waited = true;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += wait_ns / 1000000000LL;
		until.tv_nsec += wait_ns % 1000000000LL;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&d->mu);
		while (!d->stopping && pthread_cond_timedwait(&d->cv, &d->mu, &until) == 0)
			;
		pthread_mutex_unlock(&d->mu);
		if (di_stopping(d))
			return false;
		now = di_mono_ns();
		d->tokens = PROF_MIN((double)d->o.max_files_per_min,
				     d->tokens + (double)(now - d->tokens_at_ns) * per_ns);
		d->tokens_at_ns = now;
	}
	d->tokens -= 1.0;
	return true;
}

/* POST @file (size @size) to @url; the outcome, counted. */
static enum di_outcome di_post(struct agent_debuginfo *d, const char *url, const char *file,
			       uint64_t size, bool is_debug, const char *id)
{
	struct curl_slist *hdrs;
	struct buf reply;
	long status = 0;
	CURLcode cc;
	CURL *c;
	FILE *f;

	f = fopen(file, "rbe");
	if (!f) {
		DI_COUNT(d, no_file, 1);
		return DI_OUT_DONE;
	}
	buf_init(&reply, DI_MAX_REPLY + 1);
	c = di_curl(d, url, &reply, &hdrs);
	if (!c) {
		fclose(f);
		buf_release(&reply);
		DI_COUNT(d, failures, 1);
		return DI_OUT_FAILED;
	}
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, di_on_read);
	curl_easy_setopt(c, CURLOPT_READDATA, f);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
	curl_easy_setopt(c, CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)d->o.max_bytes_per_sec);
	/* No total limit (a big file at the speed cap takes long): abort when stalled. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, PROF_MAX(d->o.timeout_ms / 1000, 1L));
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	fclose(f);

	if (cc != CURLE_OK) {
		log_warn("agent debuginfo upload failed build_id=%s file=%s error=\"%s\"", id, file,
			 curl_easy_strerror(cc));
		buf_release(&reply);
		DI_COUNT(d, failures, 1);
		return DI_OUT_FAILED;
	}
	if (status == 200 || status == 201) {
		log_info("agent debuginfo uploaded build_id=%s file=%s bytes=%" PRIu64
			 " debug_file=%d status=%ld reply=\"%.200s\"",
			 id, file, size, is_debug, status, di_reply_text(&reply));
		pthread_mutex_lock(&d->mu);
		d->st.uploads++;
		d->st.upload_bytes += size;
		d->st.debug_files += is_debug;
		pthread_mutex_unlock(&d->mu);
		buf_release(&reply);
		return DI_OUT_DONE;
	}
	log_warn("agent debuginfo upload refused build_id=%s file=%s status=%ld reply=\"%.200s\"",
		 id, file, status, di_reply_text(&reply));
	buf_release(&reply);
	if (status >= 500 || status == 408 || status == 429) {
		DI_COUNT(d, failures, 1);
		return DI_OUT_FAILED;
	}
	if (status == 413)
		DI_COUNT(d, too_big, 1);
	else
		DI_COUNT(d, rejected, 1);
	return DI_OUT_DONE;
}

/* Handle one build ID (debuginfo.h, steps 1-3). */
static enum di_outcome di_handle(struct agent_debuginfo *d, const struct di_item *it)
{
	char url[4096], file[PATH_MAX + 64];
	struct stat st;
	bool is_debug = false;
	long status;

	snprintf(url, sizeof(url), "%s%s", d->base, it->id);
	status = di_head(d, url);
	if (status == 0 || status >= 500) {
		DI_COUNT(d, failures, 1);
		return DI_OUT_FAILED;
	}
	DI_COUNT(d, checks, 1);
	if (status == 200) {
		log_debug("agent debuginfo present build_id=%s path=%s", it->id, it->path);
		DI_COUNT(d, present, 1);
		return DI_OUT_DONE;
	}
	if (status != 404 && status != 401 && status != 403) {
		log_warn("agent debuginfo check answered %ld build_id=%s: not uploading", status,
			 it->id);
		DI_COUNT(d, rejected, 1);
		return DI_OUT_DONE;
	}
	if (!di_find_file(d, it, file, sizeof(file), &is_debug)) {
		log_debug("agent debuginfo no file build_id=%s path=%s pid=%u", it->id, it->path,
			  it->pid);
		DI_COUNT(d, no_file, 1);
		return DI_OUT_DONE;
	}
	if (stat(file, &st) != 0) {
		DI_COUNT(d, no_file, 1);
		return DI_OUT_DONE;
	}
	if ((uint64_t)st.st_size > d->o.max_file_bytes) {
		log_info("agent debuginfo not uploading build_id=%s file=%s bytes=%lld: over the "
			 "%" PRIu64 "-byte cap",
			 it->id, file, (long long)st.st_size, d->o.max_file_bytes);
		DI_COUNT(d, too_big, 1);
		return DI_OUT_DONE;
	}
	if (!di_take_token(d))
		return DI_OUT_FAILED;
	return di_post(d, url, file, (uint64_t)st.st_size, is_debug, it->id);
}

static void *di_thread(void *arg)
{
	struct agent_debuginfo *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct di_item it;
		enum di_outcome out;
		struct di_known *k;

		while (!d->stopping && !d->qn)
			pthread_cond_wait(&d->cv, &d->mu);
		if (d->stopping)
			break;
		it = d->queue[d->qhead];
		d->qhead = (d->qhead + 1) % d->o.max_queue;
		d->qn--;
		d->st.queued = d->qn;
		pthread_mutex_unlock(&d->mu);
		out = di_handle(d, &it);
		pthread_mutex_lock(&d->mu);
		k = di_slot(d, di_hash(it.id));
		if (k->key) {
			k->state = out == DI_OUT_DONE ? DI_DONE : DI_FAILED;
			k->retry_at_ns = di_mono_ns() + AGENT_DI_RETRY_NS;
		}
		free(it.path);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int agent_debuginfo_new(const struct agent_debuginfo_opts *opts, struct agent_debuginfo **out,
			struct prof_err *err)
{
	struct agent_debuginfo *d;
	pthread_condattr_t ca;
	sigset_t all, old;
	size_t slots = 16;
	int rc;

	*out = NULL;
	if (!opts || !opts->server_url ||
	    (strncmp(opts->server_url, "http://", 7) && strncmp(opts->server_url, "https://", 8)))
		return prof_err_set(err, -EINVAL, -1,
				    "debuginfo upload: the server URL must start with http:// or "
				    "https://");
	if ((opts->bearer_token && strpbrk(opts->bearer_token, "\r\n")) ||
	    (opts->dataset && strpbrk(opts->dataset, "\r\n")))
		return prof_err_set(
			err, -EINVAL, -1,
			"the bearer token and the dataset must not contain line breaks");
	rc = prof_curl_load(err);
	if (rc)
		return rc;
	d = xcalloc(1, sizeof(*d));
	d->o = *opts;
	if (!d->o.max_file_bytes)
		d->o.max_file_bytes = DI_DEFAULT_MAX_FILE;
	if (!d->o.max_bytes_per_sec)
		d->o.max_bytes_per_sec = DI_DEFAULT_RATE;
	if (!d->o.max_files_per_min)
		d->o.max_files_per_min = DI_DEFAULT_PER_MIN;
	if (!d->o.max_queue)
		d->o.max_queue = DI_DEFAULT_QUEUE;
	if (!d->o.max_known)
		d->o.max_known = DI_DEFAULT_KNOWN;
	if (d->o.timeout_ms <= 0)
		d->o.timeout_ms = DI_DEFAULT_TIMEOUT;
	d->o.server_url = d->o.bearer_token = d->o.dataset = NULL; /* not kept */
	d->o.proc_root = d->o.debug_dir = d->o.ca_file = NULL;
	d->o.cert_file = d->o.key_file = NULL;
	if (opts->ca_file)
		d->ca_file = xstrdup(opts->ca_file);
	if (opts->cert_file)
		d->cert_file = xstrdup(opts->cert_file);
	if (opts->key_file)
		d->key_file = xstrdup(opts->key_file);
	{
		size_t n = strlen(opts->server_url);

		while (n > 0 && opts->server_url[n - 1] == '/')
			n--;
		d->base = xasprintf("%.*s%s", (int)n, opts->server_url, DI_PATH);
	}
	if (opts->bearer_token)
		d->auth_hdr = xasprintf("Authorization: Bearer %s", opts->bearer_token);
	if (opts->dataset)
		d->dataset_hdr = xasprintf("X-Profd-Dataset: %s", opts->dataset);
	d->proc_root = xstrdup(opts->proc_root ? opts->proc_root : "/proc");
	d->debug_dir = xstrdup(opts->debug_dir ? opts->debug_dir : DI_DEFAULT_DEBUG_DIR);
	while (slots < 2 * d->o.max_known)
		slots *= 2;
	d->nknown_slots = slots;
	d->known = xcalloc(slots, sizeof(*d->known));
	d->queue = xcalloc(d->o.max_queue, sizeof(*d->queue));
	d->tokens = (double)d->o.max_files_per_min;
	d->tokens_at_ns = di_mono_ns();
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals go to the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&d->thread, NULL, di_thread, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		agent_debuginfo_close(d);
		return prof_err_set(err, -rc, -1, "debuginfo upload: cannot start a thread: %s",
				    strerror(rc));
	}
	d->thread_started = true;
	*out = d;
	return 0;
}

void agent_debuginfo_close(struct agent_debuginfo *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stopping = true;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (d->thread_started)
		pthread_join(d->thread, NULL);
	for (size_t i = 0; i < d->qn; i++)
		free(d->queue[(d->qhead + i) % d->o.max_queue].path);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d->queue);
	free(d->known);
	free(d->base);
	free(d->auth_hdr);
	free(d->dataset_hdr);
	free(d->ca_file);
	free(d->cert_file);
	free(d->key_file);
	free(d->proc_root);
	free(d->debug_dir);
	free(d);
}
