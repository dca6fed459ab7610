// SPDX-License-Identifier: Apache-2.0
/*
 * collect.c - events -> per-process profiles; see collect.h.
 *
 * Per process and interval: one model_profile per kind (on-CPU, off-CPU)
 * being built, each with small hash indexes so equal frames share one
 * location, equal stacks one stack range and a process mapping one
 * profile mapping (the dictionary rule of OTLP: no duplicates). What is
 * known about the process itself lives in the process cache (procs.h),
 * which outlives intervals.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/collect.h"
#include "agent/jit.h"
#include "agent/procmaps.h"
#include "agent/unwind.h"

#include <unistd.h>
#include <xxhash.h>

#define COLLECT_DEFAULT_MAX_SAMPLES 1000000
#define COLLECT_DEFAULT_MAX_PROCS   16384

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

/* One profile being built (on-CPU or off-CPU) and its dedup indexes. */
struct collect_prof {
	struct model_profile *prof; /* NULL until the first sample of this kind */
	uint32_t kernel_mapping;    /* profile mapping indexes, 0 = not added yet */
	uint32_t unknown_mapping, jit_mapping, trunc_loc;
	struct collect_rt_map {
		const char *map;      /* static, NULL = free slot */
		uint32_t mapping, ft; /* "[<map>]" and the frame type string */
	} rt_maps[4];		      /* named runtime frames' mappings (collect_rt_map) */
	uint32_t ft_kernel, ft_native, ft_jit, ft_abort; /* string ids of the frame types */
	uint32_t k_thread_name, k_thread_id, k_cpu;
	uint32_t link_cache[64];  /* link index by span ID hash (collect_link), 0 = none */
	struct pair_index locs;	  /* (mapping, address) -> location */
	struct pair_index stacks; /* (hash, depth) -> stack_locs offset */
	struct pair_index maps;	  /* (maps generation, map index) -> profile mapping */
};

/* One image of one process in this interval (an exec mid-interval starts another). */
struct collect_proc {
	uint32_t pid;
	struct profile_image img; /* the image (agent_proc), 0 = unknown */
	struct collect_prof cpu, off;
};

struct agent_collect {
	struct agent_collect_opts o;
	struct agent_procs *procs;
	bool own_procs;
	VEC(struct collect_proc *) procs_v;
	struct pair_index by_pid; /* (pid, image hash) -> index in procs_v */
	size_t nsamples;	  /* in this interval */
	struct agent_collect_stats stats;
	uint64_t *pcs;			 /* PROFILE_MAX_FRAMES scratch for unwound stacks */
	struct agent_binary_stats *bins; /* AGENT_COLLECT_MAX_BINARIES, open addressing by exe */
	size_t nbins;
	struct agent_binary_stats bins_other; /* binaries past the table */
	struct profile_kstack_event *kstacks; /* AGENT_COLLECT_KSTACKS slots, kind 0 = empty */
	struct agent_interp_stack *istack;    /* scratch for merged interpreter stacks */
	struct agent_jit_frame *jf;	      /* PROFILE_MAX_FRAMES raw JIT frames of c->pcs */
	bool jf_valid;			      /* c->jf describes the stack in use */
	uint32_t jit_seen, jit_unnamed; /* this sample's frames in JIT code, and of them unnamed */
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
	c->procs = opts->procs;
	if (!c->procs) {
		struct agent_procs_opts po = { 0 };

		po.proc_root = c->o.proc_root;
		po.elfcache = opts->elfcache;
		po.command_line = opts->command_line;
		if (agent_procs_new(&po, &c->procs)) {
			free(c);
			return -EINVAL;
		}
		c->own_procs = true;
	}
	c->pcs = xcalloc(PROFILE_MAX_FRAMES, sizeof(*c->pcs));
	c->jf = xcalloc(PROFILE_MAX_FRAMES, sizeof(*c->jf));
	c->bins = xcalloc(AGENT_COLLECT_MAX_BINARIES, sizeof(*c->bins));
	snprintf(c->bins_other.exe, sizeof(c->bins_other.exe), "other");
	c->kstacks = xcalloc(AGENT_COLLECT_KSTACKS, sizeof(*c->kstacks));
	if (c->o.interp)
		c->istack = xmalloc(sizeof(*c->istack));
	*out = c;
	return 0;
}

static void collect_prof_release(struct collect_prof *cp)
{
	if (cp->prof) {
		model_profile_release(cp->prof);
		free(cp->prof);
	}
	pair_release(&cp->locs);
	pair_release(&cp->stacks);
	pair_release(&cp->maps);
	memset(cp, 0, sizeof(*cp));
}

static void collect_proc_free(struct collect_proc *pr)
{
	if (!pr)
		return;
	collect_prof_release(&pr->cpu);
	collect_prof_release(&pr->off);
	free(pr);
}

static void collect_reset(struct agent_collect *c)
{
	for (size_t i = 0; i < c->procs_v.n; i++)
		collect_proc_free(c->procs_v.v[i]);
	c->procs_v.n = 0;
	pair_release(&c->by_pid);
	c->nsamples = 0;
}

void agent_collect_free(struct agent_collect *c)
{
	if (!c)
		return;
	collect_reset(c);
	VEC_FREE(&c->procs_v);
	if (c->own_procs)
		agent_procs_free(c->procs);
	free(c->pcs);
	free(c->jf);
	free(c->kstacks);
	free(c->istack);
	free(c->bins);
	free(c);
}

void agent_collect_get_stats(const struct agent_collect *c, struct agent_collect_stats *st)
{
	struct agent_procs_stats ps;

	*st = c->stats;
	agent_procs_get_stats(c->procs, &ps);
	st->maps_failed = ps.maps_failed;
}

struct agent_procs *agent_collect_procs(struct agent_collect *c)
{
	return c->procs;
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

/* The JIT frame type for a runtime, by executable name (profile.frame.type values). */
static const char *collect_jit_frame_type(const char *exe)
{
	if (!strcmp(exe, "node") || !strcmp(exe, "nodejs") || !strcmp(exe, "deno") ||
	    !strcmp(exe, "bun"))
		return "v8js";
	if (!strcmp(exe, "java"))
		return "jvm";
	if (!strncmp(exe, "python", 6))
		return "cpython";
	if (!strcmp(exe, "dotnet"))
		return "dotnet";
	return "jit";
}

static void collect_prof_attrs(struct agent_collect *c, struct model_profile *p,
			       const struct agent_proc *ap)
{
	model_attr_add_num(p, "process.pid", ap->pid);
	model_attr_add_str(p, "process.executable.name", ap->exe_name);
	if (ap->exe_path[0])
		model_attr_add_str(p, "process.executable.path", ap->exe_path);
	if (ap->vpid && ap->vpid != ap->pid)
		model_attr_add_num(p, "process.vpid", ap->vpid);
	if (ap->cmdline && ap->cmdline[0])
		model_attr_add_str(p, "process.command_line", ap->cmdline);
	if (ap->ctr.id[0])
		model_attr_add_str(p, "container.id", ap->ctr.id);
	if (ap->ctr.pod_uid[0]) {
		model_attr_add_str(p, "k8s.pod.uid", ap->ctr.pod_uid);
		agent_k8s_add_attrs(c->o.k8s, ap->ctr.pod_uid, ap->ctr.id, p);
	}
	if (c->o.host_name[0])
		model_attr_add_str(p, "host.name", c->o.host_name);
	if (ap->service[0])
		model_attr_add_str(p, "service.name", ap->service);
}

/* Start the profile of kind @kind for @ap. */
static void collect_prof_init(struct agent_collect *c, struct collect_prof *cp, uint32_t kind,
			      const struct agent_proc *ap)
{
	struct model_profile *p = cp->prof = xmalloc(sizeof(*p));

	model_profile_init(p);
	if (kind == PROFILE_EV_OFFCPU) {
		model_sample_type_add(p, "off_cpu", "nanoseconds");
		p->name = model_intern(p, "off_cpu");
		p->default_sample_type = model_intern(p, "off_cpu");
	} else {
		model_sample_type_add(p, "samples", "count");
		model_sample_type_add(p, "cpu", "nanoseconds");
		p->period_type.type = model_intern(p, "cpu");
		p->period_type.unit = model_intern(p, "nanoseconds");
		p->period = c->o.period_ns;
		p->name = model_intern(p, "process_cpu");
		p->default_sample_type = model_intern(p, "cpu");
	}
	cp->ft_kernel = model_intern(p, "kernel");
	cp->ft_native = model_intern(p, "native");
	cp->ft_jit = model_intern(p, collect_jit_frame_type(ap->exe_name));
	cp->ft_abort = model_intern(p, "abort-marker");
	cp->k_thread_name = model_intern(p, "thread.name");
	cp->k_thread_id = model_intern(p, "thread.id");
	cp->k_cpu = model_intern(p, "cpu.logical_number");
	collect_prof_attrs(c, p, ap);
}

/* The entry of @ap's image this interval; NULL at the bound (or two images with one hash). */
static struct collect_proc *collect_proc_get(struct agent_collect *c, const struct agent_proc *ap)
{
	const struct profile_image *im = &ap->img;
	uint64_t h =
		((im->start_code * 0x9e3779b97f4a7c15ull) ^ im->end_code) * 0xff51afd7ed558ccdull ^
		im->start_brk;
	uint32_t idx, key = (uint32_t)(h >> 32) ^ (uint32_t)h;
	struct collect_proc *pr;

	if (pair_get(&c->by_pid, ap->pid, key, &idx)) {
		pr = c->procs_v.v[idx];
		return !memcmp(&pr->img, im, sizeof(*im)) ? pr : NULL;
	}
	if (c->procs_v.n >= c->o.max_procs)
		return NULL;
	pr = xcalloc(1, sizeof(*pr));
	pr->pid = ap->pid;
	pr->img = *im;
	pair_put(&c->by_pid, ap->pid, key, (uint32_t)c->procs_v.n);
	VEC_PUSH(&c->procs_v, pr);
	c->stats.procs++;
	return pr;
}

/* A catch-all mapping ("[kernel.kallsyms]", "[unknown]", "[jit]") covering every address. */
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

/* A location named @name (one line, function @name) on @mapping. */
static uint32_t collect_named_loc(struct collect_prof *cp, uint32_t mapping, uint64_t addr,
				  const char *name, uint32_t frame_type)
{
	struct model_profile *p = cp->prof;
	struct model_line line = { 0 };
	uint32_t loc;

	line.function = model_function_intern(p, model_intern(p, name), 0, 0, 0);
	loc = model_location_add(p, mapping, addr, &line, 1);
	p->locations.v[loc].frame_type = frame_type;
	return loc;
}

static uint32_t collect_kernel_loc(struct agent_collect *c, struct collect_prof *cp, uint64_t addr)
{
	struct model_profile *p = cp->prof;
	const char *name = c->o.ksyms ? sym_kallsyms_lookup(c->o.ksyms, addr) : NULL;
	uint32_t loc;

	if (!cp->kernel_mapping)
		cp->kernel_mapping = collect_pseudo_mapping(p, "[kernel.kallsyms]", true);
	if (pair_get(&cp->locs, cp->kernel_mapping, addr, &loc))
		return loc;
	if (name && name[0]) {
		loc = collect_named_loc(cp, cp->kernel_mapping, addr, name, cp->ft_kernel);
	} else {
		loc = model_location_add(p, cp->kernel_mapping, addr, NULL, 0);
		p->locations.v[loc].frame_type = cp->ft_kernel;
	}
	pair_put(&cp->locs, cp->kernel_mapping, addr, loc);
	return loc;
}

/* The profile's mapping for process mapping @m (index @mi of generation @gen). */
static uint32_t collect_user_mapping(struct collect_prof *cp, const struct agent_map *m,
				     uint64_t gen, uint32_t mi)
{
	struct model_profile *p = cp->prof;
	struct model_mapping mm = { 0 };
	uint32_t idx;

	if (pair_get(&cp->maps, gen, mi, &idx))
		return idx;
	mm.memory_start = agent_map_vstart(m);
	mm.memory_limit = mm.memory_start + (m->end - m->start);
	mm.file_offset = m->offset;
	mm.filename = model_intern(p, m->path[0] ? m->path : "[anon]");
	mm.build_id = model_intern(p, m->build_id);
	idx = 0;
	/* After a maps re-read the same mapping may already be in the profile. */
	for (size_t i = 1; i < p->mappings.n && !idx; i++) {
		const struct model_mapping *o = &p->mappings.v[i];

		if (o->memory_start == mm.memory_start && o->memory_limit == mm.memory_limit &&
		    o->file_offset == mm.file_offset && o->filename == mm.filename &&
		    o->build_id == mm.build_id)
			idx = (uint32_t)i;
	}
	if (!idx)
		idx = model_mapping_add(p, &mm);
	pair_put(&cp->maps, gen, mi, idx);
	return idx;
}

static uint32_t collect_jit_loc(struct agent_collect *c, struct collect_prof *cp,
				struct agent_proc *ap, uint64_t addr, int64_t now_ns)
{
	const char *name = agent_procs_jit_symbol(c->procs, ap, addr, now_ns);
	uint32_t loc;

	c->stats.jit_frames++;
	if (name)
		c->stats.jit_named++;
	if (!cp->jit_mapping)
		cp->jit_mapping = collect_pseudo_mapping(cp->prof, "[jit]", true);
	if (pair_get(&cp->locs, cp->jit_mapping, addr, &loc)) {
		const struct model_location *l = &cp->prof->locations.v[loc];
		const char *had = model_str(
			cp->prof,
			cp->prof->functions.v[cp->prof->lines.v[l->line_off].function].name);

		/* Same address, same name: reuse (code can be replaced at an address). */
		if (!strcmp(had, name ? name : "[jit]"))
			return loc;
		return collect_named_loc(cp, cp->jit_mapping, addr, name ? name : "[jit]",
					 cp->ft_jit);
	}
	loc = collect_named_loc(cp, cp->jit_mapping, addr, name ? name : "[jit]", cp->ft_jit);
	pair_put(&cp->locs, cp->jit_mapping, addr, loc);
	return loc;
}

static uint32_t collect_user_loc(struct agent_collect *c, struct collect_prof *cp,
				 struct agent_proc *ap, uint64_t addr, int64_t now_ns)
{
	struct model_profile *p = cp->prof;
	struct agent_map *m = agent_procs_find_map(c->procs, ap, addr, now_ns);
	uint32_t mapping, loc;
	uint64_t vaddr;

	if (m && m->kind == AGENT_MAP_ANON)
		return collect_jit_loc(c, cp, ap, addr, now_ns);
	if (m) {
		mapping =
			collect_user_mapping(cp, m, ap->maps_gen, (uint32_t)(m - ap->maps.maps.v));
		vaddr = agent_map_vaddr(m, addr);
	} else {
		c->stats.unknown_frames++;
		if (!cp->unknown_mapping)
			cp->unknown_mapping = collect_pseudo_mapping(p, "[unknown]", false);
		mapping = cp->unknown_mapping;
		vaddr = addr;
	}
	if (pair_get(&cp->locs, mapping, vaddr, &loc))
		return loc;
	loc = model_location_add(p, mapping, vaddr, NULL, 0);
	p->locations.v[loc].frame_type = cp->ft_native;
	pair_put(&cp->locs, mapping, vaddr, loc);
	return loc;
}

/*
 * The "[@map]" mapping of named runtime frames of type @frame_type (both
 * static; @map is the frame type, or "v8js:node" for Node.js's own code).
 */
static struct collect_rt_map *collect_rt_map(struct collect_prof *cp, const char *map,
					     const char *frame_type)
{
	struct model_profile *p = cp->prof;
	size_t i;
	char name[40];

	for (i = 0; i < PROF_ARRAY_SIZE(cp->rt_maps) && cp->rt_maps[i].map; i++)
		if (!strcmp(cp->rt_maps[i].map, map))
			return &cp->rt_maps[i];
	if (i == PROF_ARRAY_SIZE(cp->rt_maps))
		return &cp->rt_maps[i - 1]; /* more runtimes in one process than slots */
	snprintf(name, sizeof(name), "[%s]", map);
	cp->rt_maps[i].map = map;
	cp->rt_maps[i].mapping = collect_pseudo_mapping(p, name, true);
	cp->rt_maps[i].ft = model_intern(p, frame_type);
	return &cp->rt_maps[i];
}

/*
 * A named runtime frame: @nm (@k names, innermost first: inlined methods
 * before the method they were inlined into) as one location with one
 * line each, on the runtime's pseudo mapping. Runtime objects move and
 * are freed, so their addresses do not identify the location; the
 * address is a hash of what names it, the same in every profile, and it
 * keys the location in this profile (a hit is compared line by line).
 */
static uint32_t collect_named_frames_loc(struct collect_prof *cp,
					 const struct agent_interp_name *nm, size_t k,
					 const char *frame_type)
{
	struct model_profile *p = cp->prof;
	struct model_line lines[AGENT_JIT_MAX_INLINE];
	/* Node.js's own JavaScript apart, so that hide=node can hide it (query/filter.h). */
	bool node =
		!strcmp(frame_type, "v8js") && k && nm[0].file && !strncmp(nm[0].file, "node:", 5);
	struct collect_rt_map *rm = collect_rt_map(cp, node ? "v8js:node" : frame_type, frame_type);
	uint32_t loc;
	uint64_t addr = 0;

	k = PROF_MIN(k, PROF_ARRAY_SIZE(lines));
	for (size_t i = 0; i < k; i++) {
		memset(&lines[i], 0, sizeof(lines[i]));
		lines[i].function = model_function_intern(
			p, model_intern(p, nm[i].function), 0,
			model_intern(p, nm[i].file ? nm[i].file : ""), nm[i].start_line);
		lines[i].line = nm[i].line;
		addr = XXH3_64bits_withSeed(nm[i].function, strlen(nm[i].function),
					    addr ^ (uint64_t)nm[i].line * 0x9e3779b97f4a7c15ULL);
		if (nm[i].file)
			addr ^= XXH3_64bits(nm[i].file, strlen(nm[i].file));
	}
	if (pair_get(&cp->locs, rm->mapping, addr, &loc)) {
		const struct model_location *l = &p->locations.v[loc];
		bool same = l->nlines == k;

		for (size_t i = 0; same && i < k; i++)
			same = p->lines.v[l->line_off + i].function == lines[i].function &&
			       p->lines.v[l->line_off + i].line == lines[i].line;
		if (same)
			return loc;
		loc = model_location_add(p, rm->mapping, addr, lines, (uint32_t)k);
		p->locations.v[loc].frame_type = rm->ft;
		return loc; /* a hash collision: kept unshared */
	}
	loc = model_location_add(p, rm->mapping, addr, lines, (uint32_t)k);
	p->locations.v[loc].frame_type = rm->ft;
	pair_put(&cp->locs, rm->mapping, addr, loc);
	return loc;
}

/* A named interpreter frame: one location per (function, file, start line, line). */
static uint32_t collect_interp_loc(struct collect_prof *cp, const struct agent_interp_name *nm,
				   const char *frame_type)
{
	return collect_named_frames_loc(cp, nm, 1, frame_type);
}

/*
 * The location of user frame @i (@pcs[@i], a return address past the
 * leaf): the JIT runtime's named frames when the unwinder found one
 * there and it could be named, else the native location.
 */
static uint32_t collect_user_frame(struct agent_collect *c, struct collect_prof *cp,
				   struct agent_proc *ap, const uint64_t *pcs, size_t i,
				   int64_t now_ns)
{
	if (c->jf_valid && c->jf[i].kind != AGENT_JIT_NONE) {
		struct agent_interp_name names[AGENT_JIT_MAX_INLINE];
		const char *ft = NULL;
		int k = agent_jit_name(c->o.jit, ap, &c->jf[i], names, PROF_ARRAY_SIZE(names), &ft);

		c->jit_seen++;
		if (k > 0) {
			c->stats.jit_frames++;
			c->stats.jit_named++;
			return collect_named_frames_loc(cp, names, (size_t)k, ft);
		}
		c->jit_unnamed++;
	} else if (c->jf_valid && agent_jit_has(c->o.jit, ap->pid)) {
		/* Not stepped by the runtime: unnamed if it lies in anonymous code. */
		struct agent_map *m = agent_procs_find_map(c->procs, ap, pcs[i] - (i > 0), now_ns);

		if (m && m->kind == AGENT_MAP_ANON) {
			c->jit_seen++;
			c->jit_unnamed++;
		}
	}
	return collect_user_loc(c, cp, ap, pcs[i] - (i > 0), now_ns);
}

/* The "[truncated]" root frame marking a stack cut short. */
static uint32_t collect_trunc_loc(struct collect_prof *cp)
{
	if (!cp->trunc_loc) {
		uint32_t m = collect_pseudo_mapping(cp->prof, "[truncated]", true);

		cp->trunc_loc = collect_named_loc(cp, m, 0, "[truncated]", cp->ft_abort);
	}
	return cp->trunc_loc;
}

static uint32_t collect_stack(struct collect_prof *cp, const uint32_t *locs, uint32_t n)
{
	struct model_profile *p = cp->prof;
	uint64_t h = XXH3_64bits(locs, (size_t)n * sizeof(*locs));
	uint32_t off;

	if (pair_get(&cp->stacks, h, n, &off)) {
		if (n == 0 || !memcmp(&p->stack_locs.v[off], locs, (size_t)n * sizeof(*locs)))
			return off;
		return model_stack_add(p, locs, n); /* hash collision: keep it unshared */
	}
	off = model_stack_add(p, locs, n);
	pair_put(&cp->stacks, h, n, off);
	return off;
}

/*
 * Whether a frame-pointer stack can be believed: every return address in
 * it falls in a known executable mapping. Code built without frame
 * pointers makes the chain read arbitrary stack words.
 */
static bool collect_fp_plausible(struct agent_collect *c, struct agent_proc *ap,
				 const struct profile_event *e, int un)
{
	for (int i = 1; i < un; i++)
		if (!agent_procmaps_find(&ap->maps, e->ustack[i] - 1))
			return false;
	(void)c;
	return true;
}

/*
 * The user stack to use for @e: the CFI-unwound one when the event has a
 * stack copy, unless it stopped early and the frame-pointer one is longer
 * and plausible; else the frame-pointer one. *@trunc tells whether it was cut short.
 */
static int collect_user_pcs(struct agent_collect *c, struct agent_proc *ap,
			    const struct profile_event *e, const uint64_t **pcs, bool *trunc,
			    enum agent_unwind_end *endp)
{
	int un = PROF_MIN(PROF_MAX(e->ustack_n, 0), PROFILE_MAX_FRAMES);
	enum agent_unwind_end end;
	int n;

	c->jf_valid = false;
	*pcs = (const uint64_t *)e->ustack;
	*trunc = (e->flags & PROFILE_F_USTACK_TRUNCATED) != 0;
	*endp = AGENT_UNWIND_COMPLETE; /* frame pointers: no CFI end to report */
	if (!(e->flags & PROFILE_F_STACK_COPY) || !c->o.unwinder || (e->flags & PROFILE_F_KTHREAD))
		return un;
	n = agent_unwind_user(c->o.unwinder, c->procs, ap, (const struct profile_event_ext *)e,
			      (int64_t)e->time_ns, c->pcs, c->jf, PROFILE_MAX_FRAMES, &end);
	if (n <= 0)
		return un;
	c->stats.dwarf_stacks++;
	if (end == AGENT_UNWIND_COMPLETE)
		c->stats.dwarf_complete++;
	else
		log_debug("agent unwind stopped pid=%u exe=%s frames=%d end=%s last_pc=%#" PRIx64
			  " stack_len=%u maps=%zu maps_rc=%d",
			  e->pid, ap->exe_name, n, agent_unwind_end_name(end), c->pcs[n - 1],
			  ((const struct profile_event_ext *)e)->stack_len, ap->maps.maps.n,
			  ap->maps_rc);
	if (end != AGENT_UNWIND_COMPLETE && un > n && collect_fp_plausible(c, ap, e, un))
		return un; /* frame pointers got further (e.g. JIT code without CFI) */
	*pcs = c->pcs;
	*trunc = end != AGENT_UNWIND_COMPLETE;
	*endp = end;
	c->jf_valid = c->o.jit != NULL;
	return n;
}

static size_t collect_kstack_slot(uint32_t tid)
{
	return (size_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ULL) >> 32) &
	       (AGENT_COLLECT_KSTACKS - 1);
}

void agent_collect_add_kstack(struct agent_collect *c, const struct profile_kstack_event *ke)
{
	c->kstacks[collect_kstack_slot(ke->tid)] = *ke;
}

/* The kernel stack sent at switch-in for off-CPU event @e, or NULL. */
static const struct profile_kstack_event *collect_kstack_find(struct agent_collect *c,
							      const struct profile_event *e)
{
	struct profile_kstack_event *k = &c->kstacks[collect_kstack_slot(e->tid)];

	if (k->kind != PROFILE_EV_OFFCPU_KSTACK || k->tid != e->tid || k->in_ns != e->aux) {
		c->stats.offcpu_kstack_missed++;
		return NULL;
	}
	k->kind = 0; /* used */
	return k;
}

/* The build ID of @ap's executable from its mappings, "" when not known yet. */
static const char *collect_exe_build_id(const struct agent_proc *ap)
{
	for (size_t i = 0; ap->exe_path && i < ap->maps.maps.n; i++) {
		const struct agent_map *m = &ap->maps.maps.v[i];

		if (m->build_id[0] && m->path && !strcmp(m->path, ap->exe_path))
			return m->build_id;
	}
	return "";
}

/* Count one sample of @ap in its executable's unwind counters (agent_binary_stats). */
static void collect_binary_count(struct agent_collect *c, const struct agent_proc *ap, int un,
				 bool trunc, enum agent_unwind_end end)
{
	const char *exe = ap && ap->exe_name && ap->exe_name[0] ? ap->exe_name : "[unknown]";
	struct agent_binary_stats *b = NULL;
	size_t mask = AGENT_COLLECT_MAX_BINARIES - 1;
	size_t len = strnlen(exe, AGENT_BINARY_NAME_MAX - 1);
	size_t i = (size_t)XXH3_64bits(exe, len) & mask;

	for (size_t probe = 0; probe <= mask; probe++, i = (i + 1) & mask) {
		struct agent_binary_stats *t = &c->bins[i];

		if (!t->exe[0]) {
			/* Keep a quarter of the table free: probes stay short. */
			if (c->nbins * 4 >= AGENT_COLLECT_MAX_BINARIES * 3)
				break;
			memcpy(t->exe, exe, len);
			t->exe[len] = '\0';
			c->nbins++;
			b = t;
			break;
		}
		if (!strncmp(t->exe, exe, len) && t->exe[len] == '\0') {
			b = t;
			break;
		}
	}
	if (!b)
		b = &c->bins_other;
	else if (!b->build_id[0] && ap)
		snprintf(b->build_id, sizeof(b->build_id), "%s", collect_exe_build_id(ap));
	b->samples++;
	if (un <= 0)
		b->no_user_stack++;
	else if (trunc)
		b->truncated++;
	else
		b->complete++;
	if (un > 0 && end != AGENT_UNWIND_COMPLETE && end < AGENT_UNWIND_END_MAX)
		b->ends[end]++;
}

static void collect_binary_add(struct agent_binary_stats *to, const struct agent_binary_stats *b)
{
	to->samples += b->samples;
	to->complete += b->complete;
	to->truncated += b->truncated;
	to->no_user_stack += b->no_user_stack;
	for (int k = 0; k < AGENT_UNWIND_END_MAX; k++)
		to->ends[k] += b->ends[k];
}

size_t agent_collect_binary_stats(const struct agent_collect *c, struct agent_binary_stats *out,
				  size_t max, struct agent_binary_stats *other)
{
	size_t n = 0;

	*other = c->bins_other;
	for (size_t i = 0; i < AGENT_COLLECT_MAX_BINARIES; i++) {
		const struct agent_binary_stats *b = &c->bins[i];
		size_t at;

		if (!b->exe[0])
			continue;
		/* Insertion into the top @max by samples; what falls off goes to other. */
		for (at = n; at > 0 && out[at - 1].samples < b->samples; at--)
			;
		if (at >= max) {
			collect_binary_add(other, b);
			continue;
		}
		if (n == max)
			collect_binary_add(other, &out[--n]);
		memmove(&out[at + 1], &out[at], (n - at) * sizeof(*out));
		out[at] = *b;
		n++;
	}
	return n;
}

/*
 * The link index of @ts's trace and span IDs in @cp's profile: one link
 * per span in the common case of many samples of one span (a small
 * direct-mapped cache by span ID; a miss adds a duplicate link, which
 * costs bytes, not meaning).
 */
static uint32_t collect_link(struct collect_prof *cp, const struct agent_tracectx_sample *ts)
{
	struct model_profile *p = cp->prof;
	uint32_t h = 2166136261u, *slot;
	struct model_link ml;

	for (size_t i = 0; i < sizeof(ts->span_id); i++)
		h = (h ^ ts->span_id[i]) * 16777619u;
	h ^= ts->trace_id[15];
	slot = &cp->link_cache[h % PROF_ARRAY_SIZE(cp->link_cache)];
	if (*slot && *slot < p->links.n &&
	    !memcmp(p->links.v[*slot].trace_id, ts->trace_id, sizeof(ts->trace_id)) &&
	    !memcmp(p->links.v[*slot].span_id, ts->span_id, sizeof(ts->span_id)))
		return *slot;
	memcpy(ml.trace_id, ts->trace_id, sizeof(ml.trace_id));
	memcpy(ml.span_id, ts->span_id, sizeof(ml.span_id));
	VEC_PUSH(&p->links, ml);
	*slot = (uint32_t)(p->links.n - 1);
	return *slot;
}

int agent_collect_add(struct agent_collect *c, const struct profile_event *e, int64_t time_unix_ns)
{
	const struct profile_kstack_event *ke = NULL;
	const __u64 *kstack = e->kstack;
	uint32_t locs[PROFILE_MAX_FRAMES + AGENT_INTERP_MAX_ITEMS + 1];
	struct agent_interp_stack *istack = NULL;
	struct model_label labels[3 + AGENT_TRACECTX_ATTRS];
	const struct agent_tracectx_sample *ts = NULL;
	uint32_t nlabels = 3, link = 0;
	int64_t values[2];
	struct collect_proc *pr;
	struct collect_prof *cp;
	struct agent_proc *ap;
	const uint64_t *pcs;
	uint32_t n = 0, off;
	enum agent_unwind_end end;
	bool trunc;
	int kn, un;

	if (e->kind != PROFILE_EV_CPU && e->kind != PROFILE_EV_OFFCPU)
		return -EINVAL;
	if (c->nsamples >= c->o.max_samples) {
		c->stats.dropped++;
		return -PROF_ETOOBIG;
	}
	ap = agent_procs_get_image(c->procs, e->pid, e->tid, e->comm, (int64_t)e->time_ns,
				   (e->flags & PROFILE_F_KTHREAD) ? NULL : &e->img);
	if (!ap) {
		c->stats.stale_image++;
		return -ESTALE;
	}
	if (!(pr = collect_proc_get(c, ap))) {
		c->stats.dropped++;
		return -PROF_ETOOBIG;
	}
	cp = e->kind == PROFILE_EV_OFFCPU ? &pr->off : &pr->cpu;
	if (!cp->prof)
		collect_prof_init(c, cp, e->kind, ap);

	kn = PROF_MIN(PROF_MAX(e->kstack_n, 0), PROFILE_MAX_FRAMES);
	if (e->kind == PROFILE_EV_OFFCPU && kn == 0 && (ke = collect_kstack_find(c, e))) {
		kstack = ke->kstack;
		kn = PROF_MIN(PROF_MAX(ke->kstack_n, 0), PROFILE_MAX_FRAMES);
	}
	if (e->ustack_n < 0)
		c->stats.ustack_errors++;
	if (c->o.jit && !(e->flags & PROFILE_F_KTHREAD)) {
		char root[64];

		/* Before unwinding: the runtime's step is what crosses its frames. */
		snprintf(root, sizeof(root), "%s/%u/root", c->o.proc_root, ap->pid);
		agent_jit_check(c->o.jit, ap, root, (int64_t)e->time_ns);
	}
	un = collect_user_pcs(c, ap, e, &pcs, &trunc, &end);
	c->jit_seen = c->jit_unnamed = 0;
	if (!(e->flags & PROFILE_F_KTHREAD))
		collect_binary_count(c, ap, un, trunc, end);

	/* Non-leaf frames are return addresses: step back into the call (collect.h). */
	for (int i = 0; i < kn; i++)
		locs[n++] = collect_kernel_loc(c, cp, kstack[i] - (i > 0));
	if (c->o.interp && !(e->flags & PROFILE_F_KTHREAD)) {
		char root[64];

		snprintf(root, sizeof(root), "%s/%u/root", c->o.proc_root, ap->pid);
		agent_interp_check(c->o.interp, ap, root);
		istack = agent_interp_take(c->o.interp, ap, e->tid, e->time_ns, pcs,
					   (size_t)PROF_MAX(un, 0), c->istack)
				 ? c->istack
				 : NULL;
	}
	if (istack) {
		for (size_t k = 0; k < istack->n; k++) {
			const struct agent_interp_item *it = &istack->items[k];

			if (!it->native)
				locs[n++] = collect_interp_loc(cp, &istack->names[it->index],
							       istack->frame_type);
			else if (pcs[it->index])
				locs[n++] = collect_user_frame(c, cp, ap, pcs, it->index,
							       (int64_t)e->time_ns);
		}
	} else {
		for (int i = 0; i < un; i++) {
			if (!pcs[i])
				continue;
			locs[n++] =
				collect_user_frame(c, cp, ap, pcs, (size_t)i, (int64_t)e->time_ns);
		}
	}
	if (c->jit_seen)
		agent_jit_count_sample(c->o.jit, ap->pid, c->jit_unnamed == 0);
	/* Native unwinding cut short, or the interpreter's walk (callers lost at the root). */
	if ((trunc && un > 0) || (istack && istack->truncated)) {
		locs[n++] = collect_trunc_loc(cp);
		c->stats.truncated++;
	}
	off = collect_stack(cp, locs, n);

	memset(labels, 0, sizeof(labels));
	labels[0].key = cp->k_thread_name;
	labels[0].str = model_intern_n(cp->prof, e->comm, strnlen(e->comm, PROFILE_COMM_LEN));
	labels[1].key = cp->k_thread_id;
	labels[1].num = e->tid;
	labels[2].key = cp->k_cpu;
	labels[2].num = e->cpu;
	if (e->kind == PROFILE_EV_OFFCPU) {
		values[0] = (int64_t)PROF_MIN(e->value, (uint64_t)INT64_MAX);
		c->stats.offcpu_samples++;
		c->stats.offcpu_ns += e->value;
	} else {
		values[0] = 1;
		values[1] = c->o.period_ns;
		c->stats.samples++;
	}
	if (c->o.tracectx && !(e->flags & PROFILE_F_KTHREAD)) {
		agent_tracectx_check(c->o.tracectx, ap, c->o.proc_root);
		ts = agent_tracectx_take(c->o.tracectx, e->tid, e->time_ns);
	}
	if (ts) {
		for (size_t k = 0; k < ts->nattrs; k++, nlabels++) {
			labels[nlabels].key = model_intern(cp->prof, ts->attrs[k].key);
			labels[nlabels].str = model_intern(cp->prof, ts->attrs[k].val);
		}
		if (ts->has_link)
			link = collect_link(cp, ts);
	}
	model_sample_add(cp->prof, off, n, values, labels, nlabels, time_unix_ns, link);
	c->nsamples++;
	return 0;
}

/* Widen the window to cover every sample (events sampled before it began are read after). */
static void collect_window(struct model_profile *p, int64_t start_unix_ns, int64_t duration_ns)
{
	int64_t lo = start_unix_ns, hi = start_unix_ns + duration_ns;

	for (size_t j = 0; j < p->samples.n; j++) {
		int64_t t = p->samples.v[j].timestamp_ns;

		lo = PROF_MIN(lo, t);
		hi = PROF_MAX(hi, t + 1);
	}
	p->time_ns = lo;
	p->duration_ns = hi - lo;
}

size_t agent_collect_take(struct agent_collect *c, int64_t start_unix_ns, int64_t duration_ns,
			  struct model_profile ***out)
{
	struct model_profile **v = NULL;
	size_t n = 0;

	*out = NULL;
	if (c->procs_v.n) {
		v = xcalloc(c->procs_v.n * 2, sizeof(*v));
		for (size_t i = 0; i < c->procs_v.n; i++) {
			struct collect_proc *pr = c->procs_v.v[i];
			struct collect_prof *kinds[2] = { &pr->cpu, &pr->off };

			const char *why = agent_interp_unsupported(c->o.interp, pr->pid);

			if (!why)
				why = agent_jit_unsupported(c->o.jit, pr->pid);

			for (int k = 0; k < 2; k++) {
				if (!kinds[k]->prof)
					continue;
				if (why)
					model_attr_add_str(kinds[k]->prof,
							   AGENT_INTERP_UNSUPPORTED_ATTR, why);
				collect_window(kinds[k]->prof, start_unix_ns, duration_ns);
				v[n++] = kinds[k]->prof;
				kinds[k]->prof = NULL;
			}
		}
		c->stats.profiles_emitted += n;
	}
	collect_reset(c);
	if (!n) {
		free(v);
		v = NULL;
	}
	*out = v;
	return n;
}
