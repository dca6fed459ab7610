// SPDX-License-Identifier: Apache-2.0
/*
 * collect.c - events -> per-process profiles; see collect.h.
 *
 * Per process and interval: a model_profile being built, the process's
 * executable mappings, and two small hash indexes so equal frames share
 * one location and equal stacks one stack range (the dictionary rule of
 * OTLP: no duplicates).
 */
#include "base/compat.h"
#include "base/mem.h"
#include "agent/collect.h"
#include "agent/procmaps.h"

#include <unistd.h>
#include <xxhash.h>

#define COLLECT_DEFAULT_MAX_SAMPLES 1000000
#define COLLECT_DEFAULT_MAX_PROCS   16384
#define COLLECT_REREAD_NS	    1000000000LL /* re-read maps at most once a second */

/* ---- (u64, u64) -> u32 open-addressing index ---- */

struct pair_slot {
	uint64_t a, b;
	uint32_t val; /* value + 1, 0 = empty */
};

struct pair_index {
	struct pair_slot *slots;
	size_t n, nslots; /* nslots: 0 or a power of two */
};

static uint64_t pair_hash(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;

	h = (h ^ (h >> 31) ^ b) * 0x94d049bb133111ebULL;
	return h ^ (h >> 29);
}

static bool pair_get(const struct pair_index *x, uint64_t a, uint64_t b, uint32_t *val)
{
	size_t h;

	if (!x->nslots)
		return false;
	h = pair_hash(a, b) & (x->nslots - 1);
	while (x->slots[h].val) {
		if (x->slots[h].a == a && x->slots[h].b == b) {
			*val = x->slots[h].val - 1;
			return true;
		}
		h = (h + 1) & (x->nslots - 1);
	}
	return false;
}

static void pair_put_slot(struct pair_slot *slots, size_t nslots, uint64_t a, uint64_t b,
			  uint32_t val1)
{
	size_t h = pair_hash(a, b) & (nslots - 1);

	while (slots[h].val)
		h = (h + 1) & (nslots - 1);
	slots[h].a = a;
	slots[h].b = b;
	slots[h].val = val1;
}

/* Insert a key known to be absent. */
static void pair_put(struct pair_index *x, uint64_t a, uint64_t b, uint32_t val)
{
	if ((x->n + 1) * 2 > x->nslots) {
		size_t ns = x->nslots ? x->nslots * 2 : 64;
		struct pair_slot *s = xcalloc(ns, sizeof(*s));

		for (size_t i = 0; i < x->nslots; i++)
			if (x->slots[i].val)
				pair_put_slot(s, ns, x->slots[i].a, x->slots[i].b, x->slots[i].val);
		free(x->slots);
		x->slots = s;
		x->nslots = ns;
	}
	pair_put_slot(x->slots, x->nslots, a, b, val + 1);
	x->n++;
}

static void pair_release(struct pair_index *x)
{
	free(x->slots);
	memset(x, 0, sizeof(*x));
}

/* ---- per process ---- */

struct collect_proc {
	uint32_t pid;
	struct model_profile *prof;
	struct agent_procmaps maps;
	int maps_rc;		 /* result of the last maps read */
	int64_t maps_read_ns;	 /* event clock of the last read */
	uint32_t kernel_mapping; /* profile mapping indexes, 0 = not added yet */
	uint32_t unknown_mapping;
	uint32_t ft_kernel, ft_native; /* string ids of the frame types */
	uint32_t k_thread_name, k_thread_id, k_cpu;
	struct pair_index locs;	  /* (mapping, address) -> location */
	struct pair_index stacks; /* (hash, depth) -> stack_locs offset */
};

struct agent_collect {
	struct agent_collect_opts o;
	VEC(struct collect_proc *) procs;
	struct pair_index by_pid; /* pid -> index in procs */
	size_t nsamples;	  /* in this interval */
	struct agent_collect_stats stats;
};

int agent_collect_new(const struct agent_collect_opts *opts, struct agent_collect **out)
{
	struct agent_collect *c;

	*out = NULL;
	if (!opts || opts->period_ns <= 0 || !opts->elfcache)
		return -EINVAL;
	c = xcalloc(1, sizeof(*c));
	c->o = *opts;
	if (!c->o.proc_root)
		c->o.proc_root = "/proc";
	if (!c->o.host_name)
		c->o.host_name = "";
	if (!c->o.max_samples)
		c->o.max_samples = COLLECT_DEFAULT_MAX_SAMPLES;
	if (!c->o.max_procs)
		c->o.max_procs = COLLECT_DEFAULT_MAX_PROCS;
	*out = c;
	return 0;
}

static void collect_proc_free(struct collect_proc *pr)
{
	if (!pr)
		return;
	if (pr->prof) {
		model_profile_release(pr->prof);
		free(pr->prof);
	}
	agent_procmaps_release(&pr->maps);
	pair_release(&pr->locs);
	pair_release(&pr->stacks);
	free(pr);
}

static void collect_reset(struct agent_collect *c)
{
	for (size_t i = 0; i < c->procs.n; i++)
		collect_proc_free(c->procs.v[i]);
	c->procs.n = 0;
	pair_release(&c->by_pid);
	c->nsamples = 0;
}

void agent_collect_free(struct agent_collect *c)
{
	if (!c)
		return;
	collect_reset(c);
	VEC_FREE(&c->procs);
	free(c);
}

void agent_collect_get_stats(const struct agent_collect *c, struct agent_collect_stats *st)
{
	*st = c->stats;
}

void agent_collect_profiles_free(struct model_profile **profiles, size_t n)
{
	if (!profiles)
		return;
	for (size_t i = 0; i < n; i++) {
		model_profile_release(profiles[i]);
		free(profiles[i]);
	}
	free(profiles);
}

/* Read a small /proc text file into @out (NUL-terminated, trailing newline cut). */
static bool read_small(const char *path, char *out, size_t outsz)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(out, 1, outsz - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
		out[--n] = '\0';
	return n > 0;
}

static void collect_proc_attrs(struct agent_collect *c, struct collect_proc *pr,
			       const struct profile_event *e)
{
	static const char deleted[] = " (deleted)";
	char path[512], exe[4096], name[256];
	ssize_t n;
	const char *slash;

	snprintf(path, sizeof(path), "%s/%u/exe", c->o.proc_root, pr->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		n = 0;
	exe[n] = '\0';
	if ((size_t)n > sizeof(deleted) - 1 && !strcmp(exe + n - (sizeof(deleted) - 1), deleted))
		exe[n - (sizeof(deleted) - 1)] = '\0';

	if (exe[0] && (slash = strrchr(exe, '/')) && slash[1]) {
		snprintf(name, sizeof(name), "%s", slash + 1);
	} else {
		snprintf(path, sizeof(path), "%s/%u/comm", c->o.proc_root, pr->pid);
		if (!read_small(path, name, sizeof(name)))
			snprintf(name, sizeof(name), "%.*s", PROFILE_COMM_LEN, e->comm);
	}
	model_attr_add_num(pr->prof, "process.pid", pr->pid);
	model_attr_add_str(pr->prof, "process.executable.name", name);
	if (exe[0])
		model_attr_add_str(pr->prof, "process.executable.path", exe);
	if (c->o.host_name[0])
		model_attr_add_str(pr->prof, "host.name", c->o.host_name);
}

static struct collect_proc *collect_proc_get(struct agent_collect *c, const struct profile_event *e)
{
	struct collect_proc *pr;
	struct model_profile *p;
	uint32_t idx;

	if (pair_get(&c->by_pid, e->pid, 0, &idx))
		return c->procs.v[idx];
	if (c->procs.n >= c->o.max_procs)
		return NULL;

	pr = xcalloc(1, sizeof(*pr));
	pr->pid = e->pid;
	agent_procmaps_init(&pr->maps);
	p = pr->prof = xmalloc(sizeof(*p));
	model_profile_init(p);
	model_sample_type_add(p, "samples", "count");
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	p->period = c->o.period_ns;
	p->name = model_intern(p, "process_cpu");
	p->default_sample_type = model_intern(p, "cpu");
	pr->ft_kernel = model_intern(p, "kernel");
	pr->ft_native = model_intern(p, "native");
	pr->k_thread_name = model_intern(p, "thread.name");
	pr->k_thread_id = model_intern(p, "thread.id");
	pr->k_cpu = model_intern(p, "cpu.logical_number");
	collect_proc_attrs(c, pr, e);

	pr->maps_rc = agent_procmaps_read(&pr->maps, c->o.proc_root, (int)pr->pid, c->o.elfcache);
	pr->maps_read_ns = (int64_t)e->time_ns;
	if (pr->maps_rc)
		c->stats.maps_failed++;

	pair_put(&c->by_pid, e->pid, 0, (uint32_t)c->procs.n);
	VEC_PUSH(&c->procs, pr);
	c->stats.procs++;
	return pr;
}

/* A catch-all mapping ("[kernel.kallsyms]", "[unknown]") covering every address. */
static uint32_t collect_pseudo_mapping(struct model_profile *p, const char *name,
				       bool has_functions)
{
	struct model_mapping m = { 0 };

	m.memory_start = 0;
	m.memory_limit = UINT64_MAX;
	m.filename = model_intern(p, name);
	m.has_functions = has_functions;
	return model_mapping_add(p, &m);
}

static uint32_t collect_kernel_loc(struct agent_collect *c, struct collect_proc *pr, uint64_t addr)
{
	struct model_profile *p = pr->prof;
	const char *name = c->o.ksyms ? sym_kallsyms_lookup(c->o.ksyms, addr) : NULL;
	struct model_line line = { 0 };
	uint32_t loc;

	if (!pr->kernel_mapping)
		pr->kernel_mapping = collect_pseudo_mapping(p, "[kernel.kallsyms]", true);
	if (pair_get(&pr->locs, pr->kernel_mapping, addr, &loc))
		return loc;
	if (name && name[0]) {
		line.function = model_function_intern(p, model_intern(p, name), 0, 0, 0);
		loc = model_location_add(p, pr->kernel_mapping, addr, &line, 1);
	} else {
		loc = model_location_add(p, pr->kernel_mapping, addr, NULL, 0);
	}
	p->locations.v[loc].frame_type = pr->ft_kernel;
	pair_put(&pr->locs, pr->kernel_mapping, addr, loc);
	return loc;
}

/* The profile's mapping for process mapping @m, added on first use. */
static uint32_t collect_user_mapping(struct collect_proc *pr, struct agent_map *m)
{
	struct model_profile *p = pr->prof;
	struct model_mapping mm = { 0 };

	if (m->user)
		return m->user;
	mm.memory_start = agent_map_vstart(m);
	mm.memory_limit = mm.memory_start + (m->end - m->start);
	mm.file_offset = m->offset;
	mm.filename = model_intern(p, m->path[0] ? m->path : "[anon]");
	mm.build_id = model_intern(p, m->build_id);
	/* After a maps re-read the same mapping may already be in the profile. */
	for (size_t i = 1; i < p->mappings.n; i++) {
		const struct model_mapping *o = &p->mappings.v[i];

		if (o->memory_start == mm.memory_start && o->memory_limit == mm.memory_limit &&
		    o->file_offset == mm.file_offset && o->filename == mm.filename &&
		    o->build_id == mm.build_id) {
			m->user = (uint32_t)i;
			return m->user;
		}
	}
	m->user = model_mapping_add(p, &mm);
	return m->user;
}

static uint32_t collect_user_loc(struct agent_collect *c, struct collect_proc *pr, uint64_t addr,
				 int64_t now_ns)
{
	struct model_profile *p = pr->prof;
	struct agent_map *m = agent_procmaps_find(&pr->maps, addr);
	uint32_t mapping, loc;
	uint64_t vaddr;

	if (!m && now_ns - pr->maps_read_ns >= COLLECT_REREAD_NS) {
		/* New code mapped since we looked (dlopen, JIT), or we never could read. */
		pr->maps_rc =
			agent_procmaps_read(&pr->maps, c->o.proc_root, (int)pr->pid, c->o.elfcache);
		pr->maps_read_ns = now_ns;
		if (pr->maps_rc)
			c->stats.maps_failed++;
		m = agent_procmaps_find(&pr->maps, addr);
	}
	if (m) {
		mapping = collect_user_mapping(pr, m);
		vaddr = agent_map_vaddr(m, addr);
	} else {
		c->stats.unknown_frames++;
		if (!pr->unknown_mapping)
			pr->unknown_mapping = collect_pseudo_mapping(p, "[unknown]", false);
		mapping = pr->unknown_mapping;
		vaddr = addr;
	}
	if (pair_get(&pr->locs, mapping, vaddr, &loc))
		return loc;
	loc = model_location_add(p, mapping, vaddr, NULL, 0);
	p->locations.v[loc].frame_type = pr->ft_native;
	pair_put(&pr->locs, mapping, vaddr, loc);
	return loc;
}

static uint32_t collect_stack(struct collect_proc *pr, const uint32_t *locs, uint32_t n)
{
	struct model_profile *p = pr->prof;
	uint64_t h = XXH3_64bits(locs, (size_t)n * sizeof(*locs));
	uint32_t off;

	if (pair_get(&pr->stacks, h, n, &off)) {
		if (n == 0 || !memcmp(&p->stack_locs.v[off], locs, (size_t)n * sizeof(*locs)))
			return off;
		return model_stack_add(p, locs, n); /* hash collision: keep it unshared */
	}
	off = model_stack_add(p, locs, n);
	pair_put(&pr->stacks, h, n, off);
	return off;
}

int agent_collect_add(struct agent_collect *c, const struct profile_event *e, int64_t time_unix_ns)
{
	uint32_t locs[2 * PROFILE_MAX_FRAMES];
	struct model_label labels[3];
	int64_t values[2];
	struct collect_proc *pr;
	uint32_t n = 0, off;
	int kn, un;

	if (c->nsamples >= c->o.max_samples || !(pr = collect_proc_get(c, e))) {
		c->stats.dropped++;
		return -PROF_ETOOBIG;
	}
	kn = PROF_MIN(PROF_MAX(e->kstack_n, 0), PROFILE_MAX_FRAMES);
	un = PROF_MIN(PROF_MAX(e->ustack_n, 0), PROFILE_MAX_FRAMES);
	if (e->ustack_n < 0)
		c->stats.ustack_errors++;

	/* Non-leaf frames are return addresses: step back into the call (collect.h). */
	for (int i = 0; i < kn; i++)
		locs[n++] = collect_kernel_loc(c, pr, e->kstack[i] - (i > 0));
	for (int i = 0; i < un; i++) {
		if (!e->ustack[i])
			continue;
		locs[n++] = collect_user_loc(c, pr, e->ustack[i] - (i > 0), (int64_t)e->time_ns);
	}
	off = collect_stack(pr, locs, n);

	memset(labels, 0, sizeof(labels));
	labels[0].key = pr->k_thread_name;
	labels[0].str = model_intern_n(pr->prof, e->comm, strnlen(e->comm, PROFILE_COMM_LEN));
	labels[1].key = pr->k_thread_id;
	labels[1].num = e->tid;
	labels[2].key = pr->k_cpu;
	labels[2].num = e->cpu;
	values[0] = 1;
	values[1] = c->o.period_ns;
	model_sample_add(pr->prof, off, n, values, labels, 3, time_unix_ns, 0);
	c->nsamples++;
	c->stats.samples++;
	return 0;
}

size_t agent_collect_take(struct agent_collect *c, int64_t start_unix_ns, int64_t duration_ns,
			  struct model_profile ***out)
{
	struct model_profile **v = NULL;
	size_t n = c->procs.n;

	*out = NULL;
	if (n) {
		v = xcalloc(n, sizeof(*v));
		for (size_t i = 0; i < n; i++) {
			struct collect_proc *pr = c->procs.v[i];

			struct model_profile *p = pr->prof;
			int64_t lo = start_unix_ns, hi = start_unix_ns + duration_ns;

			/* Events sampled just before the interval began are read after it. */
			for (size_t j = 0; j < p->samples.n; j++) {
				int64_t t = p->samples.v[j].timestamp_ns;

				lo = PROF_MIN(lo, t);
				hi = PROF_MAX(hi, t + 1);
			}
			p->time_ns = lo;
			p->duration_ns = hi - lo;
			v[i] = p;
			pr->prof = NULL;
		}
		c->stats.profiles_emitted += n;
	}
	collect_reset(c);
	*out = v;
	return n;
}
