// SPDX-License-Identifier: Apache-2.0
/*
 * procmaps.c - executable mappings of a process; see procmaps.h.
 *
 * /proc/PID/maps line (proc(5)):
 *   START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]
 * hex START, END, OFFSET, MAJOR, MINOR; decimal INODE; PATH runs to the end
 * of the line (it may contain spaces) and ends in " (deleted)" when the
 * file was removed.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/parse.h"
#include "agent/procmaps.h"

#include <sys/stat.h>

#define PROCMAPS_MAX_BYTES (64u << 20) /* a maps file larger than this is refused */

void agent_procmaps_init(struct agent_procmaps *pm)
{
	memset(pm, 0, sizeof(*pm));
}

static void procmaps_clear(struct agent_procmaps *pm)
{
	for (size_t i = 0; i < pm->maps.n; i++)
		free(pm->maps.v[i].path);
	pm->maps.n = 0;
}

void agent_procmaps_release(struct agent_procmaps *pm)
{
	if (!pm)
		return;
	procmaps_clear(pm);
	VEC_FREE(&pm->maps);
}

/* Parse hex digits at *p up to a byte that is not one; false when none or overflow. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	while (s < end) {
		int d = parse_hex_digit((unsigned char)*s);

		if (d < 0)
			break;
		if (v >> 60)
			return false;
		v = v << 4 | d;
		s++;
	}
	if (s == *p)
		return false;
	*out = v;
	*p = s;
	return true;
}

static bool skip_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/*
 * One line [p, end): 1 and @m filled (path owned) for an executable
 * mapping, 0 for a valid line of another mapping, -1 when malformed.
 */
static int procmaps_parse_line(const char *p, const char *end, struct agent_map *m)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	uint64_t start, stop, off, major, minor, inode = 0;
	const char *perms, *path;
	size_t plen;

	if (!parse_hex(&p, end, &start) || !skip_char(&p, end, '-') || !parse_hex(&p, end, &stop) ||
	    !skip_char(&p, end, ' ') || stop <= start)
		return -1;
	perms = p;
	if (end - p < 5)
		return -1;
	p += 4;
	if (!skip_char(&p, end, ' ') || !parse_hex(&p, end, &off) || !skip_char(&p, end, ' ') ||
	    !parse_hex(&p, end, &major) || !skip_char(&p, end, ':') ||
	    !parse_hex(&p, end, &minor) || !skip_char(&p, end, ' '))
		return -1;
	if (p >= end || *p < '0' || *p > '9')
		return -1;
	while (p < end && *p >= '0' && *p <= '9') {
		if (inode > UINT64_MAX / 10)
			return -1;
		inode = inode * 10 + (uint64_t)(*p++ - '0');
	}
	if (perms[2] != 'x')
		return 0;
	skip_spaces(&p, end);
	path = p;
	plen = (size_t)(end - p);
	if (plen >= dlen && !memcmp(path + plen - dlen, deleted, dlen))
		plen -= dlen;

	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = stop;
	m->offset = off;
	m->path = xstrndup(path, plen);
	if (plen == 6 && !memcmp(path, "[vdso]", 6))
		m->kind = AGENT_MAP_VDSO;
	else if (inode != 0 && plen > 0 && path[0] == '/')
		m->kind = AGENT_MAP_FILE;
	else
		m->kind = AGENT_MAP_ANON;
	return 1;
}

int agent_procmaps_parse(struct agent_procmaps *pm, const char *text, size_t n)
{
	const char *p = text, *end = text + n;
	int bad = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct agent_map m;
		int rc = eol > p ? procmaps_parse_line(p, eol, &m) : 0;

		if (rc < 0) {
			bad++;
		} else if (rc > 0) {
			/* The kernel lists mappings sorted and disjoint; keep that true. */
			if (pm->maps.n && m.start < pm->maps.v[pm->maps.n - 1].end) {
				free(m.path);
				bad++;
			} else {
				VEC_PUSH(&pm->maps, m);
			}
		}
		p = nl ? nl + 1 : end;
	}
	return bad;
}

bool agent_map_file_path(const struct agent_map *m, const char *proc_root, int pid, char *out,
			 size_t outsz, struct stat *st)
{
	snprintf(out, outsz, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, proc_root, pid, m->start,
		 m->end);
	if (stat(out, st) == 0)
		return true;
	if (m->path[0] == '/' &&
	    (size_t)snprintf(out, outsz, "%s/%d/root%s", proc_root, pid, m->path) < outsz &&
	    stat(out, st) == 0)
		return true;
	snprintf(out, outsz, "%s", m->path);
	return stat(out, st) == 0;
}

static void procmaps_resolve(struct agent_map *m, const char *proc_root, int pid,
			     struct agent_elfinfo_cache *cache)
{
	char path[4096];
	struct stat st;
	int64_t bias;

	if (m->kind != AGENT_MAP_FILE)
		return;
	if (!agent_map_file_path(m, proc_root, pid, path, sizeof(path), &st))
		return;
	if (!S_ISREG(st.st_mode))
		return;
	if (agent_elfinfo_lookup(cache, path, &st, m->offset, m->end - m->start, m->build_id,
				 sizeof(m->build_id), &bias) == 0) {
		m->bias = bias;
		m->normalized = true;
		m->dev = (uint64_t)st.st_dev;
		m->ino = (uint64_t)st.st_ino;
		m->size = (uint64_t)st.st_size;
		m->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
}

int agent_procmaps_read(struct agent_procmaps *pm, const char *proc_root, int pid,
			struct agent_elfinfo_cache *cache)
{
	struct buf b;
	char path[256];
	int rc;

	procmaps_clear(pm);
	buf_init(&b, PROCMAPS_MAX_BYTES);
	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid);
	rc = buf_read_file(&b, path);
	if (rc == 0 && b.len == 0)
		rc = -ESRCH; /* a zombie has no mappings */
	if (rc == 0) {
		agent_procmaps_parse(pm, b.p, b.len);
		for (size_t i = 0; i < pm->maps.n; i++)
			procmaps_resolve(&pm->maps.v[i], proc_root, pid, cache);
	}
	buf_release(&b);
	return rc;
}

struct agent_map *agent_procmaps_find(struct agent_procmaps *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->maps.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct agent_map *m = &pm->maps.v[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}
