// SPDX-License-Identifier: Apache-2.0
/* interp.c - interpreter detection, naming and merging; see interp.h. */
#include "base/compat.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/interp.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/uio.h>
#include <unistd.h>

#define INTERP_DEFAULT_MAX_PROCS 4096
#define INTERP_EVENT_SLOTS	 128 /* pending interpreter stacks (one per CPU in flight) */

static const struct agent_interp_ops *const interp_runtimes[] = {
	&agent_interp_python,
	&agent_interp_ruby,
	&agent_interp_php,
};

int agent_procmem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!len)
		return 0;
	if (!addr || addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return (size_t)n == len ? 0 : -EFAULT;
}

bool agent_proc_gone(uint32_t pid)
{
	char path[40], buf[512];
	const char *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 && errno == ESRCH;
	buf[n] = '\0';
	/* "PID (COMM) S ...": COMM may hold ')' itself, the last one ends it. */
	if (!(paren = strrchr(buf, ')')) || paren[1] != ' ')
		return false;
	return paren[2] == 'Z' || paren[2] == 'X';
}

int agent_mem_read_str(const struct agent_memreader *m, uint64_t addr, char *out, size_t max)
{
	size_t got = 0;

	out[0] = '\0';
	if (max < 1)
		return -E2BIG;
	while (got < max - 1) {
		/* Pieces that end at a 256-byte boundary never cross into an unmapped page first. */
		size_t piece = 256 - ((addr + got) & 255);
		char *nul;

		if (piece > max - 1 - got)
			piece = max - 1 - got;
		if (m->read(m->ctx, addr + got, out + got, piece)) {
			out[got] = '\0';
			return -EFAULT;
		}
		nul = memchr(out + got, '\0', piece);
		got += piece;
		if (nul)
			return 0;
	}
	out[max - 1] = '\0';
	return -E2BIG;
}

int agent_interp_elf_symbols(const char *path, struct agent_interp_sym *syms, size_t n)
{
	Elf_Scn *scn = NULL;
	size_t left = n;
	Elf *elf;
	int fd;

	for (size_t i = 0; i < n; i++)
		syms[i].found = false;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -PROF_EFORMAT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		close(fd);
		return -PROF_EFORMAT;
	}
	while (left && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t nsyms;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		nsyms = d->d_size / sh.sh_entsize;
		for (size_t k = 0; k < nsyms && left; k++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)k, &sym) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_name || !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			for (size_t i = 0; i < n; i++) {
				if (syms[i].found || strcmp(name, syms[i].name))
					continue;
				syms[i].found = true;
				syms[i].value = sym.st_value;
				syms[i].size = sym.st_size;
				left--;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return 0;
}

/* The .eh_frame_hdr search table lookup of agent_interp_elf_fde, on the section's bytes. */
static int interp_fde_lookup(const uint8_t *d, size_t size, uint64_t hdr, uint64_t vaddr,
			     uint64_t *lo, uint64_t *hi)
{
	uint32_t count;
	size_t l = 0, r;

	if (size < 12 || d[0] != 1)
		return -PROF_EFORMAT;
	if (d[1] != 0x1b || d[2] != 0x03 || d[3] != 0x3b)
		return -ENOTSUP;
	memcpy(&count, d + 8, 4);
	if (count > (size - 12) / 8)
		return -PROF_EFORMAT;
	r = count;
	/* The last entry whose initial location is <= vaddr. */
	while (l < r) {
		size_t m = l + (r - l) / 2;
		int32_t loc;

		memcpy(&loc, d + 12 + m * 8, 4);
		if (hdr + (uint64_t)(int64_t)loc <= vaddr)
			l = m + 1;
		else
			r = m;
	}
	if (l == 0 || l >= count)
		return -ENOENT;
	{
		int32_t a, b;

		memcpy(&a, d + 12 + (l - 1) * 8, 4);
		memcpy(&b, d + 12 + l * 8, 4);
		*lo = hdr + (uint64_t)(int64_t)a;
		*hi = hdr + (uint64_t)(int64_t)b;
	}
	return 0;
}

int agent_interp_elf_fde(const char *path, uint64_t vaddr, uint64_t *lo, uint64_t *hi)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	Elf *elf;
	int fd, rc = -ENOENT;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -PROF_EFORMAT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstr)) {
		elf_end(elf);
		close(fd);
		return -PROF_EFORMAT;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(elf, shstr, sh.sh_name)) || strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		rc = d && d->d_buf
			     ? interp_fde_lookup(d->d_buf, d->d_size, sh.sh_addr, vaddr, lo, hi)
			     : -PROF_EFORMAT;
		break;
	}
	elf_end(elf);
	close(fd);
	return rc;
}

/* ---- per process ---- */

struct interp_proc {
	uint32_t pid;
	bool used;
	bool refused; /* a runtime was found and is not supported (reason in stats or why) */
	char why[96];
	uint64_t maps_gen;		    /* generation detection last ran for */
	const struct agent_interp_ops *ops; /* NULL: no runtime attached */
	struct agent_interp_attach att;
	int stats; /* index into stats, -1 = none */
};

struct interp_slot {
	bool full;
	struct profile_interp_event ev;
};

struct agent_interp {
	struct agent_interp_opts o;
	struct interp_proc *procs; /* open addressing by pid, o.max_procs * 2 slots */
	size_t nslots, nprocs;
	struct interp_slot *slots; /* INTERP_EVENT_SLOTS by tid */
	struct agent_interp_stats stats[AGENT_INTERP_MAX_STATS];
	size_t nstats;
	uint64_t slot_lost;
};

int agent_interp_new(const struct agent_interp_opts *opts, struct agent_interp **out)
{
	struct agent_interp *ip;

	*out = NULL;
	if (!opts)
		return -EINVAL;
	ip = xcalloc(1, sizeof(*ip));
	ip->o = *opts;
	if (!ip->o.max_procs)
		ip->o.max_procs = INTERP_DEFAULT_MAX_PROCS;
	ip->nslots = 1;
	while (ip->nslots < ip->o.max_procs * 2)
		ip->nslots <<= 1;
	ip->procs = xcalloc(ip->nslots, sizeof(*ip->procs));
	ip->slots = xcalloc(INTERP_EVENT_SLOTS, sizeof(*ip->slots));
	*out = ip;
	return 0;
}

static void interp_proc_clear(struct interp_proc *e)
{
	if (e->ops && e->ops->free)
		e->ops->free(e->att.priv);
	memset(e, 0, sizeof(*e));
}

void agent_interp_free(struct agent_interp *ip)
{
	if (!ip)
		return;
	for (size_t i = 0; i < ip->nslots; i++)
		if (ip->procs[i].used)
			interp_proc_clear(&ip->procs[i]);
	free(ip->procs);
	free(ip->slots);
	free(ip);
}

static size_t interp_hash(uint32_t pid, size_t mask)
{
	return (size_t)(((uint64_t)pid * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

static struct interp_proc *interp_find(const struct agent_interp *ip, uint32_t pid)
{
	size_t mask = ip->nslots - 1, i = interp_hash(pid, mask);

	for (size_t probe = 0; probe < ip->nslots; probe++, i = (i + 1) & mask) {
		if (!ip->procs[i].used)
			return NULL;
		if (ip->procs[i].pid == pid)
			return &ip->procs[i];
	}
	return NULL;
}

static struct interp_proc *interp_add(struct agent_interp *ip, uint32_t pid)
{
	size_t mask = ip->nslots - 1, i = interp_hash(pid, mask);

	if (ip->nprocs >= ip->o.max_procs)
		return NULL;
	while (ip->procs[i].used)
		i = (i + 1) & mask;
	memset(&ip->procs[i], 0, sizeof(ip->procs[i]));
	ip->procs[i].used = true;
	ip->procs[i].pid = pid;
	ip->procs[i].stats = -1;
	ip->nprocs++;
	return &ip->procs[i];
}

/* Remove slot @i, moving later entries of its probe run back (linear probing deletion). */
static void interp_remove_slot(struct agent_interp *ip, size_t i)
{
	size_t mask = ip->nslots - 1, j = i;

	interp_proc_clear(&ip->procs[i]);
	ip->nprocs--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!ip->procs[j].used)
			return;
		home = interp_hash(ip->procs[j].pid, mask);
		/* Move j to i when its home is not in (i, j] cyclically. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			ip->procs[i] = ip->procs[j];
			memset(&ip->procs[j], 0, sizeof(ip->procs[j]));
			i = j;
		}
	}
}

void agent_interp_forget(struct agent_interp *ip, uint32_t pid)
{
	struct interp_proc *e = interp_find(ip, pid);

	if (!e)
		return;
	if (e->ops && ip->o.remove)
		ip->o.remove(ip->o.ctx, pid);
	interp_remove_slot(ip, (size_t)(e - ip->procs));
}

/* The stats entry of (runtime, exe, version), made when absent; -1 when the table is full. */
static int interp_stats_get(struct agent_interp *ip, const char *rt, const char *exe,
			    const char *version, bool supported, const char *reason)
{
	struct agent_interp_stats *s;

	for (size_t i = 0; i < ip->nstats; i++) {
		s = &ip->stats[i];
		if (!strcmp(s->runtime, rt) && !strncmp(s->exe, exe, sizeof(s->exe) - 1) &&
		    !strcmp(s->version, version) && s->supported == supported)
			return (int)i;
	}
	if (ip->nstats >= AGENT_INTERP_MAX_STATS)
		return -1;
	s = &ip->stats[ip->nstats];
	memset(s, 0, sizeof(*s));
	snprintf(s->runtime, sizeof(s->runtime), "%s", rt);
	snprintf(s->exe, sizeof(s->exe), "%s", exe);
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->supported = supported;
	snprintf(s->reason, sizeof(s->reason), "%s", reason ? reason : "");
	return (int)ip->nstats++;
}

static const char *interp_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

void agent_interp_check(struct agent_interp *ip, struct agent_proc *ap, const char *root)
{
	struct agent_memreader mem = { agent_procmem_read, (void *)(uintptr_t)ap->pid };
	struct interp_proc *e = interp_find(ip, ap->pid);

	if (e && e->maps_gen == ap->maps_gen)
		return;
	if (!ap->maps.maps.n)
		return; /* nothing mapped known yet: look again when the maps are read */
	if (!e && !(e = interp_add(ip, ap->pid)))
		return;
	e->maps_gen = ap->maps_gen;
	if (e->ops || e->stats >= 0)
		return; /* attached, or refused as unsupported: the runtime does not change */
	for (size_t i = 0; i < ap->maps.maps.n; i++) {
		const struct agent_map *m = &ap->maps.maps.v[i];
		const char *base;
		char path[PROFILE_PATH_LEN + 64];

		if (m->kind != AGENT_MAP_FILE || !m->path || !m->path[0] || !m->normalized)
			continue;
		/* The same file mapped twice (several executable segments) is tried once. */
		if (i > 0 && ap->maps.maps.v[i - 1].path &&
		    !strcmp(ap->maps.maps.v[i - 1].path, m->path))
			continue;
		base = interp_basename(m->path);
		for (size_t r = 0; r < PROF_ARRAY_SIZE(interp_runtimes); r++) {
			const struct agent_interp_ops *ops = interp_runtimes[r];
			struct agent_interp_attach att;
			uint64_t bias = m->start - (m->offset + (uint64_t)m->bias);
			int rc;

			if (!ops->match(base))
				continue;
			memset(&att, 0, sizeof(att));
			snprintf(path, sizeof(path), "%s%s", root, m->path);
			rc = ops->attach(path, bias, &mem, &att);
			if (rc == -ENOENT)
				continue;
			if (rc == -ENOTSUP) {
				char why[96];

				snprintf(why, sizeof(why),
					 "%s%s%s: interpreter frames not supported", ops->name,
					 att.version[0] ? " " : "", att.version);
				e->refused = true;
				snprintf(e->why, sizeof(e->why), "%s", why);
				e->stats = interp_stats_get(ip, ops->name, ap->exe_name,
							    att.version, false, why);
				if (e->stats >= 0)
					ip->stats[e->stats].procs++;
				else
					e->stats = INT32_MAX; /* refused, not counted */
				log_info("agent interp pid=%u exe=%s file=%s: %s", ap->pid,
					 ap->exe_name, m->path, why);
				if (ops->free)
					ops->free(att.priv);
				return;
			}
			if (rc) {
				log_debug("agent interp pid=%u file=%s runtime=%s attach_rc=%d",
					  ap->pid, m->path, ops->name, rc);
				if (ops->free)
					ops->free(att.priv);
				continue;
			}
			att.bpf.runtime = ops->runtime;
			if (ip->o.install && (rc = ip->o.install(ip->o.ctx, ap->pid, &att.bpf))) {
				log_warn(
					"agent interp pid=%u runtime=%s: not registered in BPF: %s",
					ap->pid, ops->name, strerror(-rc));
				if (ops->free)
					ops->free(att.priv);
				return;
			}
			e->ops = ops;
			e->att = att;
			e->stats = interp_stats_get(ip, ops->name, ap->exe_name, att.version, true,
						    NULL);
			if (e->stats >= 0)
				ip->stats[e->stats].procs++;
			log_info("agent interp pid=%u exe=%s runtime=%s version=%s file=%s",
				 ap->pid, ap->exe_name, ops->name, att.version, m->path);
			return;
		}
	}
}

static size_t interp_slot_of(uint32_t tid)
{
	return (size_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ULL) >> 32) & (INTERP_EVENT_SLOTS - 1);
}

void agent_interp_add_event(struct agent_interp *ip, const struct profile_interp_event *ie)
{
	struct interp_slot *s = &ip->slots[interp_slot_of(ie->tid)];

	if (s->full)
		ip->slot_lost++;
	s->full = true;
	/* Only the frames sent: the rest of the record is not read. */
	memcpy(&s->ev, ie, offsetof(struct profile_interp_event, frames));
	s->ev.n = PROF_MIN(ie->n, (uint32_t)PROFILE_INTERP_MAX_FRAMES);
	memcpy(s->ev.frames, ie->frames, s->ev.n * sizeof(ie->frames[0]));
}

/* The loop range holding @pc, or NULL. */
static const struct agent_interp_range *interp_loop_of(const struct agent_interp_range *loops,
						       size_t nloops, uint64_t pc)
{
	for (size_t i = 0; i < nloops; i++)
		if (pc >= loops[i].lo && pc < loops[i].hi)
			return &loops[i];
	return NULL;
}

static bool interp_in_loops(const struct agent_interp_range *loops, size_t nloops, uint64_t pc)
{
	return interp_loop_of(loops, nloops, pc) != NULL;
}

size_t agent_interp_merge(const uint64_t *pcs, size_t npcs, const struct agent_interp_range *loops,
			  size_t nloops, const uint32_t *flags, size_t nframes,
			  struct agent_interp_item *out, size_t max)
{
	size_t n = 0, next = 0; /* next interpreter frame to place */
	bool inner = false;	/* the frame before was an inner-range frame that took a run */

	for (size_t i = 0; i < npcs && n < max; i++) {
		uint64_t pc = pcs[i] - (i > 0);
		const struct agent_interp_range *r = interp_loop_of(loops, nloops, pc);
		bool after_inner = inner;

		inner = false;
		if (r && after_inner && !r->inner)
			continue; /* the loop frame of the activation whose core took the run */
		if (next < nframes && r) {
			/* One activation: frames up to and including the next entry frame. */
			while (next < nframes && n < max) {
				bool entry = flags[next] & PROFILE_IF_ENTRY;

				out[n].native = false;
				out[n++].index = (uint32_t)next++;
				if (entry)
					break;
			}
			inner = r->inner;
			continue;
		}
		out[n].native = true;
		out[n++].index = (uint32_t)i;
	}
	/* Native unwinding stopped before the outer activations: they are the callers. */
	while (next < nframes && n < max) {
		out[n].native = false;
		out[n++].index = (uint32_t)next++;
	}
	return n;
}

bool agent_interp_take(struct agent_interp *ip, const struct agent_proc *ap, uint32_t tid,
		       uint64_t time_ns, const uint64_t *pcs, size_t npcs,
		       struct agent_interp_stack *out)
{
	struct interp_slot *s = &ip->slots[interp_slot_of(tid)];
	struct agent_memreader mem = { agent_procmem_read, (void *)(uintptr_t)ap->pid };
	struct interp_proc *e = interp_find(ip, ap->pid);
	struct agent_interp_stats *st;
	uint32_t flags[PROFILE_INTERP_MAX_FRAMES];
	bool have = s->full && s->ev.tid == tid && s->ev.time_ns == time_ns;

	if (have)
		s->full = false;
	if (!e || !e->ops)
		return false;
	st = e->stats >= 0 && e->stats < (int)ip->nstats ? &ip->stats[e->stats] : NULL;
	if (!have || s->ev.runtime != e->ops->runtime) {
		if (st) {
			for (size_t i = 0; i < npcs; i++)
				if (interp_in_loops(e->att.loops, e->att.nloops,
						    pcs[i] - (i > 0))) {
					st->no_event++;
					break;
				}
		}
		return false;
	}
	if (st)
		st->samples++;
	out->nnames = 0;
	for (uint32_t i = 0; i < s->ev.n; i++) {
		struct agent_interp_name *nm = &out->names[i];
		int rc = e->ops->name_frame(e->att.priv, &mem, &s->ev.frames[i], nm);

		if (!rc) {
			snprintf(out->strs[i][0], AGENT_INTERP_NAME_MAX, "%s", nm->function);
			snprintf(out->strs[i][1], AGENT_INTERP_NAME_MAX, "%s",
				 nm->file ? nm->file : "");
			nm->function = out->strs[i][0];
			nm->file = out->strs[i][1];
		} else {
			if (st) {
				if (rc == -ESTALE)
					st->stale++;
				else if (rc == -PROF_ECORRUPT)
					st->corrupt++;
				else if (agent_proc_gone(ap->pid))
					st->exited++;
				else
					st->read_failed++;
			}
			return false;
		}
		flags[i] = s->ev.frames[i].flags;
	}
	out->nnames = s->ev.n;
	out->truncated = s->ev.err != PROFILE_IE_OK;
	out->frame_type = e->ops->name;
	out->n = agent_interp_merge(pcs, npcs, e->att.loops, e->att.nloops, flags, out->nnames,
				    out->items, AGENT_INTERP_MAX_ITEMS);
	if (st) {
		st->named++;
		st->frames_named += out->nnames;
	}
	return true;
}

const char *agent_interp_unsupported(const struct agent_interp *ip, uint32_t pid)
{
	struct interp_proc *e = ip ? interp_find(ip, pid) : NULL;

	return e && e->refused ? e->why : NULL;
}

size_t agent_interp_get_stats(const struct agent_interp *ip, struct agent_interp_stats *out,
			      size_t max)
{
	size_t n = PROF_MIN(max, ip->nstats);

	memcpy(out, ip->stats, n * sizeof(*out));
	return n;
}
