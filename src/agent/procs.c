// SPDX-License-Identifier: Apache-2.0
/* procs.c - per-process cache of /proc facts; see procs.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "agent/procs.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PROCS_DEFAULT_MAX	 8192
#define PROCS_DEFAULT_EXEC_READS 200
#define PROCS_SWEEP_NS		 1000000000LL
#define PROCS_PERFMAP_MAX_BYTES	 (64u << 20)
#define PROCS_PERFMAP_MAX_SYMS	 (1u << 20)
#define PROCS_CMDLINE_MAX	 4096
#define PROCS_SMALL_FILE_MAX	 (64u << 10)

struct agent_procs {
	struct agent_procs_opts o;
	struct agent_proc **slots; /* open addressing by pid, linear probing; NULL = empty */
	size_t nslots, n;
	uint64_t maps_gen;
	double exec_tokens; /* token bucket for eager exec reads */
	int64_t exec_tokens_ns;
	int64_t swept_ns; /* last sweep of dead and idle entries */
	char pidns[64];	  /* our own PID namespace ("pid:[N]"), "" = unknown */
	uint32_t mntns;	  /* our own mount namespace's inode, 0 = unknown */
	struct agent_procs_stats st;
};

static size_t procs_slot(const struct agent_procs *ps, uint32_t pid)
{
	uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (ps->nslots - 1);
}

static struct agent_proc *procs_lookup(const struct agent_procs *ps, uint32_t pid)
{
	for (size_t h = procs_slot(ps, pid);; h = (h + 1) & (ps->nslots - 1)) {
		struct agent_proc *pr = ps->slots[h];

		if (!pr)
			return NULL;
		if (pr->pid == pid)
			return pr;
	}
}

static void procs_insert(struct agent_procs *ps, struct agent_proc *pr)
{
	size_t h = procs_slot(ps, pr->pid);

	while (ps->slots[h])
		h = (h + 1) & (ps->nslots - 1);
	ps->slots[h] = pr;
	ps->n++;
}

/* Remove @pid's slot, shifting later entries of its cluster back (no tombstones). */
static void procs_remove(struct agent_procs *ps, uint32_t pid)
{
	size_t mask = ps->nslots - 1, i = procs_slot(ps, pid);

	while (ps->slots[i] && ps->slots[i]->pid != pid)
		i = (i + 1) & mask;
	if (!ps->slots[i])
		return;
	ps->slots[i] = NULL;
	ps->n--;
	for (size_t j = (i + 1) & mask; ps->slots[j]; j = (j + 1) & mask) {
		size_t k = procs_slot(ps, ps->slots[j]->pid);

		/* Move j back to i when its home k is not cyclically in (i, j]. */
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			ps->slots[i] = ps->slots[j];
			ps->slots[j] = NULL;
			i = j;
		}
	}
}

static void proc_free_libs(struct agent_proc *pr)
{
	for (size_t i = 0; i < pr->nlibs; i++)
		free(pr->libs[i].path);
	free(pr->libs);
	pr->libs = NULL;
	pr->nlibs = 0;
}

static void proc_free(struct agent_proc *pr)
{
	if (!pr)
		return;
	proc_free_libs(pr);
	free(pr->exe_path);
	free(pr->exe_name);
	free(pr->cmdline);
	agent_procmaps_release(&pr->maps);
	agent_perfmap_release(&pr->perfmap);
	free(pr);
}

int agent_procs_new(const struct agent_procs_opts *opts, struct agent_procs **out)
{
	struct agent_procs *ps;

	*out = NULL;
	if (!opts || !opts->elfcache)
		return -EINVAL;
	ps = xcalloc(1, sizeof(*ps));
	ps->o = *opts;
	if (!ps->o.proc_root)
		ps->o.proc_root = "/proc";
	if (!ps->o.max_procs)
		ps->o.max_procs = PROCS_DEFAULT_MAX;
	if (!ps->o.max_exec_reads)
		ps->o.max_exec_reads = PROCS_DEFAULT_EXEC_READS;
	if (!ps->o.perfmap_max_bytes)
		ps->o.perfmap_max_bytes = PROCS_PERFMAP_MAX_BYTES;
	ps->nslots = 16;
	while (ps->nslots < ps->o.max_procs * 2)
		ps->nslots *= 2;
	ps->slots = xcalloc(ps->nslots, sizeof(*ps->slots));
	ps->exec_tokens = ps->o.max_exec_reads;
	{
		char path[256], mnt[64];
		ssize_t n;

		snprintf(path, sizeof(path), "%s/self/ns/pid", ps->o.proc_root);
		n = readlink(path, ps->pidns, sizeof(ps->pidns) - 1);
		ps->pidns[n > 0 ? n : 0] = '\0';
		snprintf(path, sizeof(path), "%s/self/ns/mnt", ps->o.proc_root);
		n = readlink(path, mnt, sizeof(mnt) - 1);
		mnt[n > 0 ? n : 0] = '\0';
		if (!strncmp(mnt, "mnt:[", 5))
			ps->mntns = (uint32_t)strtoul(mnt + 5, NULL, 10);
	}
	*out = ps;
	return 0;
}

void agent_procs_free(struct agent_procs *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nslots; i++)
		proc_free(ps->slots[i]);
	free(ps->slots);
	free(ps);
}

void agent_procs_get_stats(const struct agent_procs *ps, struct agent_procs_stats *st)
{
	*st = ps->st;
	st->entries = ps->n;
}

/*
 * @pr's directory: <proc_root>/PID, or <proc_root>/PID/task/TID when the
 * main thread is gone and thread TID still runs (the main thread's own
 * exe, maps and root are empty once it exited).
 */
static void proc_dir(const struct agent_procs *ps, const struct agent_proc *pr, char *out, size_t n)
{
	if (pr->via_tid)
		snprintf(out, n, "%s/%u/task/%u", ps->o.proc_root, pr->pid, pr->via_tid);
	else
		snprintf(out, n, "%s/%u", ps->o.proc_root, pr->pid);
}

/* Read a small file of @pr's /proc directory; 0 and @b filled, or -errno. */
static int read_proc_file(const struct agent_procs *ps, const struct agent_proc *pr,
			  const char *name, struct buf *b, size_t max)
{
	char dir[128], path[256];

	buf_init(b, max);
	proc_dir(ps, pr, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return buf_read_file(b, path);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void proc_set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = xstrdup(s ? s : "");
}

/*
 * service.name from the start of /proc/PID/environ (the variables a
 * process was started with; PROCS_SMALL_FILE_MAX bytes at most: an entry
 * past that is not seen).
 */
static void read_service(const struct agent_procs *ps, struct agent_proc *pr)
{
	char dir[128], path[256];
	FILE *f;

	proc_dir(ps, pr, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/environ", dir);
	f = fopen(path, "re");
	if (!f)
		return;
	char *tmp = xmalloc(PROCS_SMALL_FILE_MAX);
	size_t k = fread(tmp, 1, PROCS_SMALL_FILE_MAX, f);

	fclose(f);
	agent_environ_service(tmp, k, pr->service, sizeof(pr->service));
	explicit_bzero(tmp, k); /* other variables may be secrets */
	free(tmp);
}

/* Maps into a scratch table first: a failed read keeps what we had. */
/*
 * The main thread of @pr is gone (its exe link is): read through another
 * thread whose exe link still resolves, @pr->last_tid first, else the
 * first one listed in /proc/PID/task. Sets @pr->via_tid; false when none.
 */
static bool proc_use_live_thread(const struct agent_procs *ps, struct agent_proc *pr)
{
	char path[192], exe[16];
	struct dirent *de;
	DIR *d;

	if (pr->last_tid && pr->last_tid != pr->pid) {
		snprintf(path, sizeof(path), "%s/%u/task/%u/exe", ps->o.proc_root, pr->pid,
			 pr->last_tid);
		if (readlink(path, exe, sizeof(exe)) > 0) {
			pr->via_tid = pr->last_tid;
			return true;
		}
	}
	snprintf(path, sizeof(path), "%s/%u/task", ps->o.proc_root, pr->pid);
	d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d))) {
		char *stop;
		unsigned long tid = strtoul(de->d_name, &stop, 10);

		if (*stop || !tid || tid == pr->pid || tid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%lu/exe", ps->o.proc_root, pr->pid, tid);
		if (readlink(path, exe, sizeof(exe)) > 0) {
			pr->via_tid = (uint32_t)tid;
			break;
		}
	}
	closedir(d);
	return pr->via_tid != 0;
}

/* @pr's maps (through pr->via_tid when set) into @pm: 0 or -errno. */
static int proc_maps_into(struct agent_procs *ps, struct agent_proc *pr, struct agent_procmaps *pm)
{
	char root[128];

	if (!pr->via_tid)
		return agent_procmaps_read(pm, ps->o.proc_root, (int)pr->pid, ps->o.elfcache);
	snprintf(root, sizeof(root), "%s/%u/task", ps->o.proc_root, pr->pid);
	return agent_procmaps_read(pm, root, (int)pr->via_tid, ps->o.elfcache);
}

static void proc_read_maps(struct agent_procs *ps, struct agent_proc *pr, int64_t now_ns)
{
	struct agent_procmaps fresh;
	int rc;

	agent_procmaps_init(&fresh);
	rc = proc_maps_into(ps, pr, &fresh);
	if (!rc && !fresh.maps.n && !pr->via_tid && proc_use_live_thread(ps, pr)) {
		/* No mapping at all: the main thread is gone (a zombie has no mm). */
		agent_procmaps_release(&fresh);
		agent_procmaps_init(&fresh);
		rc = proc_maps_into(ps, pr, &fresh);
	}
	ps->st.maps_reads++;
	pr->maps_read_ns = now_ns;
	pr->maps_rc = rc;
	if (rc) {
		ps->st.maps_failed++;
		agent_procmaps_release(&fresh);
		return;
	}
	agent_procmaps_release(&pr->maps);
	pr->maps = fresh;
	pr->maps_gen = ++ps->maps_gen;
}

static int64_t procs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int agent_stat_image(const char *stat, size_t len, struct profile_image *img)
{
	static const int want[] = { 26, 27, 47 }; /* startcode, endcode, start_brk */
	const char *p = NULL, *end = stat + len;
	uint64_t v[3] = { 0, 0, 0 };
	int field = 2; /* ")" ends field 2, comm, which may hold spaces and ")" */
	size_t k = 0;

	for (const char *q = stat; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p)
		return -EINVAL;
	while (p < end && k < PROF_ARRAY_SIZE(want)) {
		char *stop;
		unsigned long long x;

		while (p < end && (*p == ' ' || *p == '\n'))
			p++;
		if (p >= end)
			break;
		if (++field == want[k]) {
			errno = 0;
			x = strtoull(p, &stop, 10);
			if (errno || stop == p || stop > end)
				return -EINVAL;
			v[k++] = x;
			p = stop;
			continue;
		}
		while (p < end && *p != ' ')
			p++;
	}
	if (k < 2)
		return -EINVAL; /* start_brk came in Linux 3.3: optional */
	/* 1: not permitted to see it (fs/proc/array.c); 0: no mm. */
	if (v[0] <= 1 || v[1] <= 1)
		v[0] = v[1] = v[2] = 0;
	img->start_code = v[0];
	img->end_code = v[1];
	img->start_brk = v[2];
	return 0;
}

/*
 * The image /proc shows now; leaves @pr's alone when it cannot be read.
 * @has_exe: the executable link resolved, so the process has an mm: an
 * image of 0 then means an exec is under way (the new mm and its
 * executable are installed, start_code is not set yet), and the names
 * just read are the new image's, which no sample taken so far ran.
 */
static void proc_read_image(struct agent_procs *ps, struct agent_proc *pr, bool has_exe)
{
	struct profile_image img;
	struct buf b;

	pr->img_in_exec = false;
	if (read_proc_file(ps, pr, "stat", &b, 4096) == 0 &&
	    agent_stat_image(b.p ? b.p : "", b.len, &img) == 0) {
		if (img.start_code)
			pr->img = img;
		else if (has_exe)
			pr->img_in_exec = true;
	}
	buf_release(&b);
}

/*
 * Executable, name, namespace pid, container, command line. The image
 * (/proc/PID/stat) is read right after the executable link, so the two
 * describe the same image unless an exec falls in the microseconds
 * between.
 */
static void proc_read_attrs(struct agent_procs *ps, struct agent_proc *pr, const char *exec_file,
			    const char *comm)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	char dir[128], path[256], exe[4096];
	const char *name = NULL;
	struct buf b;
	ssize_t n;

	pr->image_ns = procs_mono_ns();
	pr->attrs_read = true;
	proc_dir(ps, pr, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/exe", dir);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0 && errno == ENOENT && !pr->via_tid && proc_use_live_thread(ps, pr)) {
		/* The main thread exited before the others: read a live thread's. */
		proc_dir(ps, pr, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/exe", dir);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n < 0) {
			pr->via_tid = 0;
			proc_dir(ps, pr, dir, sizeof(dir));
		}
	}
	if (n < 0)
		n = 0;
	exe[n] = '\0';
	proc_read_image(ps, pr, n > 0);
	if ((size_t)n > dlen && !strcmp(exe + n - dlen, deleted))
		exe[n - dlen] = '\0';
	if (exe[0]) {
		proc_set_str(&pr->exe_path, exe);
		name = base_name(exe);
	} else if (exec_file && exec_file[0]) {
		/* Gone already: the kernel told us what it exec'd. */
		if (exec_file[0] == '/' && !pr->exe_path[0])
			proc_set_str(&pr->exe_path, exec_file);
		name = base_name(exec_file);
	}
	if ((!name || !name[0]) && pr->exe_name[0])
		name = NULL; /* keep what we had */
	else if (!name || !name[0]) {
		/*
		 * No executable (gone, or a zombie): the comm. A sample of the
		 * main thread names it as it was then; /proc's may be that of
		 * an image exec'd since (a spawned child sampled before its
		 * exec, read after it).
		 */
		buf_init(&b, 0);
		if (comm && comm[0] && pr->last_tid == pr->pid) {
			proc_set_str(&pr->exe_name, comm);
		} else if (read_proc_file(ps, pr, "comm", &b, 256) == 0 && b.len) {
			while (b.len && b.p[b.len - 1] == '\n')
				b.p[--b.len] = '\0';
			proc_set_str(&pr->exe_name, b.p);
		} else {
			proc_set_str(&pr->exe_name, comm);
		}
		buf_release(&b);
	}
	if (name && name[0])
		proc_set_str(&pr->exe_name, name);

	/*
	 * In our own PID namespace its pid there is the one we know: skip
	 * /proc/PID/status, which the kernel formats line by line (a few
	 * per cent of the agent's time on a host that starts many processes).
	 */
	snprintf(path, sizeof(path), "%s/ns/pid", dir);
	n = ps->pidns[0] ? readlink(path, exe, sizeof(exe) - 1) : -1;
	if (n > 0 && (size_t)n == strlen(ps->pidns) && !memcmp(exe, ps->pidns, (size_t)n)) {
		pr->vpid = pr->pid;
	} else {
		if (read_proc_file(ps, pr, "status", &b, PROCS_SMALL_FILE_MAX) == 0)
			pr->vpid = agent_status_nspid(b.p ? b.p : "", b.len);
		buf_release(&b);
	}
	if (read_proc_file(ps, pr, "cgroup", &b, PROCS_SMALL_FILE_MAX) == 0)
		agent_container_parse(b.p ? b.p : "", b.len, &pr->ctr);
	buf_release(&b);
	read_service(ps, pr);
	if (ps->o.command_line) {
		/* cmdline can be long: read the file capped, keep the start. */
		char cpath[256];
		FILE *f;

		snprintf(cpath, sizeof(cpath), "%s/cmdline", dir);
		f = fopen(cpath, "re");
		if (f) {
			char tmp[PROCS_CMDLINE_MAX + 1];
			size_t k = fread(tmp, 1, PROCS_CMDLINE_MAX, f);

			fclose(f);
			while (k > 0 && tmp[k - 1] == '\0')
				k--;
			for (size_t i = 0; i < k; i++)
				if (tmp[i] == '\0')
					tmp[i] = ' ';
			tmp[k] = '\0';
			if (k)
				proc_set_str(&pr->cmdline, tmp);
		}
	}
}

static void procs_evict_lru(struct agent_procs *ps)
{
	struct agent_proc *victim = NULL;

	for (size_t i = 0; i < ps->nslots; i++) {
		struct agent_proc *pr = ps->slots[i];

		if (pr && (!victim || (pr->dead && !victim->dead) ||
			   (pr->dead == victim->dead && pr->used_ns < victim->used_ns)))
			victim = pr;
	}
	if (victim) {
		procs_remove(ps, victim->pid);
		proc_free(victim);
		ps->st.evicted++;
	}
}

static struct agent_proc *procs_create(struct agent_procs *ps, uint32_t pid, int64_t now_ns)
{
	struct agent_proc *pr = procs_lookup(ps, pid);

	if (pr) {
		procs_remove(ps, pid);
		proc_free(pr);
	}
	if (ps->n >= ps->o.max_procs)
		procs_evict_lru(ps);
	pr = xcalloc(1, sizeof(*pr));
	pr->pid = pid;
	pr->exe_path = xstrdup("");
	pr->exe_name = xstrdup("");
	pr->used_ns = pr->first_ns = now_ns;
	agent_procmaps_init(&pr->maps);
	pr->maps_rc = -ENOENT;
	procs_insert(ps, pr);
	ps->st.created++;
	return pr;
}

static unsigned proc_apply_libs(struct agent_procs *ps, struct agent_proc *pr);

/* First maps read of @pr; when the process is gone, rebuild from its events. */
static void proc_first_maps(struct agent_procs *ps, struct agent_proc *pr, int64_t now_ns)
{
	proc_read_maps(ps, pr, now_ns);
	if (pr->maps_rc && proc_apply_libs(ps, pr)) {
		ps->st.maps_rebuilt++;
		pr->maps_rc = 0;
	}
	if (!pr->maps_read_ns)
		pr->maps_read_ns = 1; /* read once, whatever the clock says */
	proc_free_libs(pr);
}

static bool procs_take_exec_token(struct agent_procs *ps, int64_t now_ns)
{
	double rate = ps->o.max_exec_reads;

	if (ps->exec_tokens_ns)
		ps->exec_tokens += (double)(now_ns - ps->exec_tokens_ns) * rate / 1e9;
	ps->exec_tokens_ns = now_ns;
	if (ps->exec_tokens > rate)
		ps->exec_tokens = rate;
	if (ps->exec_tokens < 1.0)
		return false;
	ps->exec_tokens -= 1.0;
	return true;
}

/* Whether @pr describes image @img; a part unknown on either side matches. */
static bool proc_same_image(const struct agent_proc *pr, const struct profile_image *img)
{
	const uint64_t a[] = { img->start_code, img->end_code, img->start_brk };
	const uint64_t b[] = { pr->img.start_code, pr->img.end_code, pr->img.start_brk };

	if (a[0] && pr->img_in_exec)
		return false; /* read mid-exec: names of an image no sample has run yet */
	if (!a[0] || !b[0])
		return true;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(a); i++)
		if (a[i] && b[i] && a[i] != b[i])
			return false;
	return true;
}

/* A new entry for @pid read from /proc (through thread @tid if its main thread is gone). */
static struct agent_proc *procs_read_new(struct agent_procs *ps, uint32_t pid, uint32_t tid,
					 const char *comm, int64_t now_ns)
{
	struct agent_proc *pr = procs_create(ps, pid, now_ns);

	pr->last_tid = tid;
	proc_read_attrs(ps, pr, NULL, comm);
	proc_first_maps(ps, pr, now_ns);
	return pr;
}

/* The entry for @pid (live, or made from /proc), with @tid as the thread to read through. */
/*
 * @pr (procs_lookup of @pid, may be NULL) when live, else a new entry;
 * @tid is the thread to read through. The comm is copied only when /proc
 * is read: this runs for every sample.
 */
static struct agent_proc *procs_get_tid(struct agent_procs *ps, struct agent_proc *pr, uint32_t pid,
					uint32_t tid, const char *comm, int64_t now_ns)
{
	char cbuf[32];

	if (pr && !pr->dead) {
		pr->used_ns = now_ns;
		pr->last_tid = tid;
		/* Made by a loader event, or by an exec past the rate limit. */
		if (!pr->attrs_read) {
			snprintf(cbuf, sizeof(cbuf), "%.*s", 16, comm ? comm : "");
			proc_read_attrs(ps, pr, NULL, cbuf);
		}
		if (!pr->maps_read_ns)
			proc_first_maps(ps, pr, now_ns);
		return pr;
	}
	snprintf(cbuf, sizeof(cbuf), "%.*s", 16, comm ? comm : "");
	return procs_read_new(ps, pid, tid, cbuf, now_ns);
}

struct agent_proc *agent_procs_get(struct agent_procs *ps, uint32_t pid, const char *comm,
				   int64_t now_ns)
{
	return procs_get_tid(ps, procs_lookup(ps, pid), pid, pid, comm, now_ns);
}

/*
 * @pr is gone and nothing was known of it (no exec event: a forked child
 * that never exec'd, or one sampled before its exec). Fork copies the
 * address space, so a live entry of the same image @img (start_code,
 * end_code and start_brk; brk is randomized per exec) is its parent or a
 * sibling: take its names, container and mappings (a live one first; a
 * parent known only from its exec event has its maps read now).
 * O(entries), only for such processes. Returns whether one was found.
 */
static bool proc_inherit(struct agent_procs *ps, struct agent_proc *pr,
			 const struct profile_image *img, int64_t now_ns)
{
	struct agent_proc *from = NULL;

	if (pr->inherit_tried || !img->start_code || !img->end_code || !img->start_brk ||
	    pr->exe_path[0] || (!pr->maps_rc && pr->maps.maps.n))
		return false;
	pr->inherit_tried = true; /* the scan is O(entries): once per entry */
	for (size_t i = 0; i < ps->nslots; i++) {
		struct agent_proc *q = ps->slots[i];

		if (!q || q == pr || !q->exe_path[0] || memcmp(&q->img, img, sizeof(*img)))
			continue;
		/* A parent known from its exec event but never sampled: read its maps now. */
		if (!q->maps_read_ns && !q->dead)
			proc_first_maps(ps, q, now_ns);
		if (q->maps_rc || !q->maps.maps.n)
			continue;
		from = q;
		if (!q->dead)
			break; /* a live one (the parent) before a dead sibling */
	}
	if (!from)
		return false;
	proc_set_str(&pr->exe_path, from->exe_path);
	proc_set_str(&pr->exe_name, from->exe_name);
	if (from->cmdline)
		proc_set_str(&pr->cmdline, from->cmdline);
	memcpy(pr->service, from->service, sizeof(pr->service));
	pr->ctr = from->ctr;
	pr->img = *img;
	agent_procmaps_release(&pr->maps);
	agent_procmaps_init(&pr->maps);
	for (size_t i = 0; i < from->maps.maps.n; i++) {
		struct agent_map m = from->maps.maps.v[i];

		m.path = xstrdup(m.path ? m.path : "");
		m.user = 0;
		VEC_PUSH(&pr->maps.maps, m);
	}
	pr->maps_rc = 0;
	pr->maps_gen = ++ps->maps_gen;
	ps->st.inherited++;
	return true;
}

struct agent_proc *agent_procs_get_image(struct agent_procs *ps, uint32_t pid, uint32_t tid,
					 const char *comm, int64_t now_ns,
					 const struct profile_image *img)
{
	struct agent_proc *pr = procs_lookup(ps, pid);

	/*
	 * After the exit event the last thread still tears the process down
	 * (its mm gone: an image of 0) or runs on briefly: the dead entry is
	 * still this process, not a reused pid.
	 */
	if (img && pr && pr->dead && now_ns - pr->dead_ns < AGENT_PROCS_DEAD_NS &&
	    (!img->start_code || (pr->img.start_code && proc_same_image(pr, img)))) {
		pr->used_ns = now_ns;
		return pr;
	}
	pr = procs_get_tid(ps, pr, pid, tid, comm, now_ns);
	if (img && !pr->img.start_code && proc_inherit(ps, pr, img, now_ns))
		return pr;
	if (!img || proc_same_image(pr, img))
		return pr;
	if (pr->image_ns < now_ns) {
		/* The process exec'd after we read it, and we were not told. */
		char cbuf[32];

		ps->st.image_rereads++;
		snprintf(cbuf, sizeof(cbuf), "%.*s", 16, comm ? comm : "");
		pr = procs_read_new(ps, pid, tid, cbuf, now_ns);
		if (proc_same_image(pr, img))
			return pr;
	}
	ps->st.stale_image++;
	return NULL;
}

/*
 * Whether @st is the file the exec event named by inode @ino and device
 * @kdev (the kernel's dev_t: major << 20 | minor, include/linux/kdev_t.h).
 */
static bool stat_is_file(const struct stat *st, uint64_t ino, uint32_t kdev)
{
	return (uint64_t)st->st_ino == ino && major(st->st_dev) == kdev >> 20 &&
	       minor(st->st_dev) == (kdev & 0xfffff);
}

/*
 * @ex's relative file name as an absolute path in the parent's working
 * directory, into @out, when that file is the one exec'd (inode and
 * device as the kernel gave them); false otherwise.
 */
static bool proc_resolve_relative(const struct agent_procs *ps, const struct agent_exec *ex,
				  char *out, size_t n)
{
	const char *name = ex->filename;
	char path[128], cwd[PROFILE_PATH_LEN], joined[2 * PROFILE_PATH_LEN + 2], canon[PATH_MAX];
	struct stat st;
	ssize_t k;

	if (!name || !name[0] || name[0] == '/' || !ex->ppid || !ex->exe_ino)
		return false;
	snprintf(path, sizeof(path), "%s/%u/cwd", ps->o.proc_root, ex->ppid);
	k = readlink(path, cwd, sizeof(cwd) - 1);
	if (k <= 0 || cwd[0] != '/')
		return false;
	cwd[k] = '\0';
	snprintf(joined, sizeof(joined), "%s/%s", cwd, name);
	/* Canonical ("..", "//" and symlinks resolved), as /proc/PID/exe gives it. */
	if (!realpath(joined, canon) || strlen(canon) >= n)
		return false;
	memcpy(out, canon, strlen(canon) + 1);
	return stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
	       stat_is_file(&st, ex->exe_ino, ex->exe_dev);
}

void agent_procs_on_exec(struct agent_procs *ps, uint32_t pid, const struct agent_exec *ex,
			 int64_t now_ns)
{
	const char *filename = ex->filename;
	char cbuf[32], resolved[PROFILE_PATH_LEN + 1];
	struct agent_proc *pr;

	snprintf(cbuf, sizeof(cbuf), "%.*s", 16, ex->comm ? ex->comm : "");
	pr = procs_create(ps, pid, now_ns);
	pr->from_exec = true;
	pr->img = ex->img;
	pr->image_ns = now_ns;
	pr->mnt_ns = ex->mnt_ns;
	pr->exe_ino = ex->exe_ino;
	pr->exe_dev = ex->exe_dev;
	if (proc_resolve_relative(ps, ex, resolved, sizeof(resolved))) {
		filename = resolved;
		ps->st.exec_relative++;
	}
	if (!procs_take_exec_token(ps, now_ns)) {
		/* Over budget: names from the event only; /proc when sampled. */
		ps->st.exec_skipped++;
		if (filename && filename[0] == '/')
			proc_set_str(&pr->exe_path, filename);
		proc_set_str(&pr->exe_name, filename && filename[0] ? base_name(filename) : cbuf);
		return;
	}
	proc_read_attrs(ps, pr, filename, cbuf);
	ps->st.exec_reads++;
}

/* Insert @m into @pm's sorted table unless it overlaps a known mapping. Takes @m's path. */
static bool procs_insert_map(struct agent_procmaps *pm, struct agent_map *m)
{
	size_t at = 0;

	while (at < pm->maps.n && pm->maps.v[at].end <= m->start)
		at++;
	if (at < pm->maps.n && pm->maps.v[at].start < m->end) {
		free(m->path);
		return false; /* /proc already told us */
	}
	VEC_RESERVE(&pm->maps, 1);
	memmove(&pm->maps.v[at + 1], &pm->maps.v[at], (pm->maps.n - at) * sizeof(*pm->maps.v));
	pm->maps.v[at] = *m;
	pm->maps.n++;
	return true;
}

/*
 * The executable segments of the ELF file @path (@is_exe: the process's
 * executable) loaded with bias @bias. The file is opened in the process's
 * root; when that is gone, by the same path in ours only if the process
 * shares our mount namespace (else the path may name another file), and
 * the executable only if it is the inode and device the exec event gave.
 */
static unsigned procs_add_lib(struct agent_procs *ps, struct agent_proc *pr, const char *path,
			      uint64_t bias, bool is_exe)
{
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	char dir[128], open_path[PROFILE_PATH_LEN + 160];
	Elf64_Phdr ph[64];
	Elf64_Ehdr eh;
	struct stat st;
	unsigned added = 0;
	int fd;

	/* The process's own view of the path first (containers), then ours. */
	proc_dir(ps, pr, dir, sizeof(dir));
	snprintf(open_path, sizeof(open_path), "%s/root%s", dir, path);
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (!pr->mnt_ns || !ps->mntns || pr->mnt_ns == ps->mntns)) {
		snprintf(open_path, sizeof(open_path), "%s", path);
		fd = open(open_path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (is_exe && pr->exe_ino && !stat_is_file(&st, pr->exe_ino, pr->exe_dev)) ||
	    pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > PROF_ARRAY_SIZE(ph) ||
	    pread(fd, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) !=
		    (ssize_t)(eh.e_phnum * sizeof(*ph))) {
		close(fd);
		return 0;
	}
	close(fd);
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		struct agent_map m;
		int64_t b;

		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) || !ph[i].p_memsz)
			continue;
		memset(&m, 0, sizeof(m));
		m.start = (bias + ph[i].p_vaddr) & ~(pg - 1);
		m.end = (bias + ph[i].p_vaddr + ph[i].p_memsz + pg - 1) & ~(pg - 1);
		m.offset = ph[i].p_offset & ~(pg - 1);
		if (m.end <= m.start)
			continue;
		m.kind = AGENT_MAP_FILE;
		if (agent_elfinfo_lookup(ps->o.elfcache, open_path, &st, m.offset, m.end - m.start,
					 m.build_id, sizeof(m.build_id), &b) == 0) {
			m.bias = b;
			m.normalized = true;
			m.dev = (uint64_t)st.st_dev;
			m.ino = (uint64_t)st.st_ino;
			m.size = (uint64_t)st.st_size;
			m.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		}
		m.path = xstrdup(path);
		if (procs_insert_map(&pr->maps, &m))
			added++;
	}
	return added;
}

/* The lowest p_vaddr of an executable PT_LOAD of @path, or -1. */
static int64_t procs_min_exec_vaddr(const char *path)
{
	Elf64_Phdr ph[64];
	Elf64_Ehdr eh;
	int64_t min = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum <= PROF_ARRAY_SIZE(ph) &&
	    pread(fd, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) ==
		    (ssize_t)(eh.e_phnum * sizeof(*ph)))
		for (unsigned i = 0; i < eh.e_phnum; i++)
			if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
			    (min < 0 || (int64_t)ph[i].p_vaddr < min))
				min = (int64_t)ph[i].p_vaddr;
	close(fd);
	return min;
}

/* Add the stored link map's (or the executable's start_code) ranges to @pr's maps. */
static unsigned proc_apply_libs(struct agent_procs *ps, struct agent_proc *pr)
{
	unsigned added = 0;
	bool exe_done = false;

	for (size_t i = 0; i < pr->nlibs; i++) {
		const char *path = pr->libs[i].path[0] ? pr->libs[i].path : pr->exe_path;

		if (!pr->libs[i].path[0])
			exe_done = true;
		if (path[0] == '/')
			added +=
				procs_add_lib(ps, pr, path, pr->libs[i].bias, !pr->libs[i].path[0]);
	}
	if (!exe_done && pr->img.start_code && pr->exe_path[0] == '/') {
		/* A static executable (no loader): bias = start_code - lowest code vaddr. */
		int64_t min = procs_min_exec_vaddr(pr->exe_path);

		if (min >= 0 && pr->img.start_code >= (uint64_t)min)
			added += procs_add_lib(ps, pr, pr->exe_path,
					       pr->img.start_code - (uint64_t)min, true);
	}
	if (added) {
		pr->maps_gen = ++ps->maps_gen;
		ps->st.libs_mapped += added;
	}
	return added;
}

void agent_procs_on_libs(struct agent_procs *ps, const struct profile_libs_event *le,
			 int64_t now_ns)
{
	struct agent_proc *pr = procs_lookup(ps, le->pid);
	unsigned n = PROF_MIN(le->n, (uint32_t)PROFILE_MAX_LIBS);

	if (!pr || pr->dead)
		pr = procs_create(ps, le->pid, now_ns); /* no exec seen: facts on first sample */
	ps->st.libs_events++;
	proc_free_libs(pr);
	pr->libs = xcalloc(n ? n : 1, sizeof(*pr->libs));
	for (unsigned i = 0; i < n; i++) {
		char name[PROFILE_PATH_LEN + 1];

		snprintf(name, sizeof(name), "%.*s", PROFILE_PATH_LEN, le->libs[i].name);
		if (name[0] && name[0] != '/')
			continue; /* "linux-vdso.so.1" */
		pr->libs[pr->nlibs].bias = le->libs[i].l_addr;
		pr->libs[pr->nlibs].path = xstrdup(name);
		pr->nlibs++;
	}
	if (pr->maps_read_ns) /* read already (sampled before the loader finished) */
		proc_apply_libs(ps, pr);
}

void agent_procs_on_exit(struct agent_procs *ps, uint32_t pid, int64_t now_ns)
{
	struct agent_proc *pr = procs_lookup(ps, pid);

	if (pr && !pr->dead) {
		pr->dead = true;
		pr->dead_ns = now_ns;
	}
}

void agent_procs_tick(struct agent_procs *ps, int64_t now_ns)
{
	if (now_ns - ps->swept_ns < PROCS_SWEEP_NS)
		return;
	/* Free dead entries after their grace time and entries unused for long. */
	for (size_t i = 0; i < ps->nslots; i++) {
		struct agent_proc *pr = ps->slots[i];

		if (pr && ((pr->dead && now_ns - pr->dead_ns >= AGENT_PROCS_DEAD_NS) ||
			   (!pr->dead && now_ns - pr->used_ns >= AGENT_PROCS_IDLE_NS))) {
			procs_remove(ps, pr->pid);
			proc_free(pr);
			i--; /* the removal may have shifted another entry into slot i */
		}
	}
	ps->swept_ns = now_ns;
}

struct agent_map *agent_procs_find_map(struct agent_procs *ps, struct agent_proc *pr, uint64_t addr,
				       int64_t now_ns)
{
	struct agent_map *m = agent_procmaps_find(&pr->maps, addr);

	if (!m && !pr->dead && now_ns - pr->maps_read_ns >= AGENT_PROCS_REREAD_NS) {
		/* New code mapped since we looked (dlopen, JIT), or we never could read. */
		proc_read_maps(ps, pr, now_ns);
		m = agent_procmaps_find(&pr->maps, addr);
	}
	return m;
}

const char *agent_procs_jit_symbol(struct agent_procs *ps, struct agent_proc *pr, uint64_t addr,
				   int64_t now_ns)
{
	const char *name = NULL;
	char dir[128], path[512];

	if (pr->perfmap_read_ns)
		name = agent_perfmap_lookup(&pr->perfmap, addr);
	if (name || pr->dead ||
	    (pr->perfmap_read_ns && now_ns - pr->perfmap_read_ns < AGENT_PROCS_REREAD_NS))
		return name;
	/* The runtime names the file with the pid it sees: its namespace's. */
	proc_dir(ps, pr, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/root/tmp/perf-%u.map", dir, pr->vpid ? pr->vpid : pr->pid);
	pr->perfmap_read_ns = now_ns;
	pr->perfmap_rc = agent_perfmap_load(&pr->perfmap, path, ps->o.perfmap_max_bytes,
					    PROCS_PERFMAP_MAX_SYMS);
	if (pr->perfmap_rc == 1)
		ps->st.perfmap_loads++;
	return agent_perfmap_lookup(&pr->perfmap, addr);
}
