// SPDX-License-Identifier: Apache-2.0
/* jit.c - JIT runtime detection, stepping and naming per process; see jit.h. */
#include "base/compat.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/jit.h"
#include "agent/interp.h"

#define JIT_DEFAULT_MAX_PROCS 4096
#define JIT_RETRY_NS	      1000000000LL /* a runtime not ready is asked again after this */

static const struct agent_jit_ops *const jit_runtimes[] = {
	&agent_jit_hotspot,
	&agent_jit_v8,
};

int agent_jit_stack_read(const struct agent_jit_stack *stk, uint64_t addr, uint64_t *out)
{
	if (addr < stk->base || stk->len < 8 || addr - stk->base > (uint64_t)stk->len - 8)
		return -ERANGE;
	memcpy(out, stk->bytes + (addr - stk->base), 8);
	return 0;
}

/* One process with a JIT runtime found, refused, or not ready yet. */
struct jit_proc {
	uint32_t pid;
	uint64_t maps_gen; /* generation detection last ran for */
	int64_t retry_ns;  /* a runtime said -EAGAIN: ask again from then (0 = not waiting) */
	const struct agent_jit_ops *ops; /* NULL: none attached */
	struct agent_jit_attach att;
	struct agent_memreader mem;
	int stats; /* index into stats, -1 = none */
	bool refused;
	char why[96];
	/* The attached file and its bias: its ranges are claimed in every mapping of it. */
	char file[PROFILE_PATH_LEN];
	uint64_t file_bias;
};

struct agent_jit {
	struct agent_jit_opts o;
	VEC(struct jit_proc *) procs; /* sorted by pid */
	struct agent_jit_stats stats[AGENT_INTERP_MAX_STATS];
	size_t nstats;
};

int agent_jit_new(const struct agent_jit_opts *opts, struct agent_jit **out)
{
	struct agent_jit *j;

	*out = NULL;
	if (!opts || (opts->nops && !opts->ops))
		return -EINVAL;
	j = xcalloc(1, sizeof(*j));
	j->o = *opts;
	if (!j->o.max_procs)
		j->o.max_procs = JIT_DEFAULT_MAX_PROCS;
	if (!j->o.ops) {
		j->o.ops = jit_runtimes;
		j->o.nops = PROF_ARRAY_SIZE(jit_runtimes);
	}
	*out = j;
	return 0;
}

static void jit_proc_free(struct jit_proc *e)
{
	if (!e)
		return;
	if (e->ops && e->ops->free)
		e->ops->free(e->att.priv);
	free(e);
}

void agent_jit_free(struct agent_jit *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->procs.n; i++)
		jit_proc_free(j->procs.v[i]);
	VEC_FREE(&j->procs);
	free(j);
}

/* Index of the first entry with pid >= @pid. */
static size_t jit_lower(const struct agent_jit *j, uint32_t pid)
{
	size_t l = 0, r = j->procs.n;

	while (l < r) {
		size_t m = l + (r - l) / 2;

		if (j->procs.v[m]->pid < pid)
			l = m + 1;
		else
			r = m;
	}
	return l;
}

static struct jit_proc *jit_find(const struct agent_jit *j, uint32_t pid)
{
	size_t i = jit_lower(j, pid);

	return i < j->procs.n && j->procs.v[i]->pid == pid ? j->procs.v[i] : NULL;
}

static struct jit_proc *jit_add(struct agent_jit *j, uint32_t pid)
{
	size_t i = jit_lower(j, pid);
	struct jit_proc *e;

	if (j->procs.n >= j->o.max_procs)
		return NULL;
	e = xcalloc(1, sizeof(*e));
	e->pid = pid;
	e->stats = -1;
	e->mem.read = agent_procmem_read;
	e->mem.ctx = (void *)(uintptr_t)pid;
	VEC_PUSH(&j->procs, e); /* grow by one, then shift into place */
	memmove(&j->procs.v[i + 1], &j->procs.v[i], (j->procs.n - 1 - i) * sizeof(e));
	j->procs.v[i] = e;
	return e;
}

void agent_jit_forget(struct agent_jit *j, uint32_t pid)
{
	size_t i;

	if (!j)
		return;
	i = jit_lower(j, pid);
	if (i >= j->procs.n || j->procs.v[i]->pid != pid)
		return;
	jit_proc_free(j->procs.v[i]);
	memmove(&j->procs.v[i], &j->procs.v[i + 1], (j->procs.n - 1 - i) * sizeof(j->procs.v[0]));
	j->procs.n--;
}

/* The stats entry of (runtime, exe, version), made when absent; -1 when the table is full. */
static int jit_stats_get(struct agent_jit *j, const char *rt, const char *exe, const char *version,
			 bool supported, const char *reason)
{
	struct agent_jit_stats *s;

	for (size_t i = 0; i < j->nstats; i++) {
		s = &j->stats[i];
		if (!strcmp(s->runtime, rt) && !strncmp(s->exe, exe, sizeof(s->exe) - 1) &&
		    !strcmp(s->version, version) && s->supported == supported)
			return (int)i;
	}
	if (j->nstats >= AGENT_INTERP_MAX_STATS)
		return -1;
	s = &j->stats[j->nstats];
	memset(s, 0, sizeof(*s));
	snprintf(s->runtime, sizeof(s->runtime), "%s", rt);
	snprintf(s->exe, sizeof(s->exe), "%s", exe);
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->supported = supported;
	snprintf(s->reason, sizeof(s->reason), "%s", reason ? reason : "");
	return (int)j->nstats++;
}

static struct agent_jit_stats *jit_stats_of(struct agent_jit *j, const struct jit_proc *e)
{
	return e->stats >= 0 && (size_t)e->stats < j->nstats ? &j->stats[e->stats] : NULL;
}

static const char *jit_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Offer mapping @m of @ap to each runtime; true when detection is over for this process. */
static bool jit_try_map(struct agent_jit *j, struct jit_proc *e, const struct agent_proc *ap,
			const struct agent_map *m, const char *root, int64_t now_ns)
{
	const char *base = jit_basename(m->path);
	char path[PROFILE_PATH_LEN + 64];

	for (size_t r = 0; r < j->o.nops; r++) {
		const struct agent_jit_ops *ops = j->o.ops[r];
		struct agent_jit_attach att;
		uint64_t bias = m->start - (m->offset + (uint64_t)m->bias);
		int rc;

		if (!ops->match(base))
			continue;
		memset(&att, 0, sizeof(att));
		snprintf(path, sizeof(path), "%s%s", root, m->path);
		rc = ops->attach(path, bias, &e->mem, &att);
		if (rc && ops->free)
			ops->free(att.priv);
		if (rc == -ENOENT)
			continue;
		if (rc == -EAGAIN) {
			e->retry_ns = now_ns + JIT_RETRY_NS;
			return true;
		}
		if (rc == -ENOTSUP) {
			snprintf(e->why, sizeof(e->why), "%s%s%s: JIT frames not supported",
				 ops->name, att.version[0] ? " " : "", att.version);
			e->refused = true;
			e->stats = jit_stats_get(j, ops->name, ap->exe_name, att.version, false,
						 e->why);
			if (e->stats >= 0)
				j->stats[e->stats].procs++;
			log_info("agent jit pid=%u exe=%s file=%s: %s", ap->pid, ap->exe_name,
				 m->path, e->why);
			return true;
		}
		if (rc) {
			log_debug("agent jit pid=%u file=%s runtime=%s attach_rc=%d", ap->pid,
				  m->path, ops->name, rc);
			continue;
		}
		e->ops = ops;
		snprintf(e->file, sizeof(e->file), "%s", m->path);
		e->file_bias = bias;
		e->att = att;
		e->retry_ns = 0;
		e->stats = jit_stats_get(j, ops->name, ap->exe_name, att.version, true, NULL);
		if (e->stats >= 0)
			j->stats[e->stats].procs++;
		log_info("agent jit pid=%u exe=%s runtime=%s version=%s file=%s", ap->pid,
			 ap->exe_name, ops->name, att.version, m->path);
		return true;
	}
	return false;
}

void agent_jit_check(struct agent_jit *j, struct agent_proc *ap, const char *root, int64_t now_ns)
{
	struct jit_proc *e;

	if (!j || !ap->maps.maps.n)
		return; /* nothing mapped known yet: look again when the maps are read */
	e = jit_find(j, ap->pid);
	if (e && (e->ops || e->refused))
		return; /* attached or refused: the runtime does not change without an exec */
	if (e && e->maps_gen == ap->maps_gen && (!e->retry_ns || now_ns < e->retry_ns))
		return;
	if (!e && !(e = jit_add(j, ap->pid)))
		return;
	e->maps_gen = ap->maps_gen;
	e->retry_ns = 0;
	for (size_t i = 0; i < ap->maps.maps.n; i++) {
		const struct agent_map *m = &ap->maps.maps.v[i];

		if (m->kind != AGENT_MAP_FILE || !m->path || !m->path[0] || !m->normalized)
			continue;
		/* The same file mapped twice (several executable segments) is tried once. */
		if (i > 0 && ap->maps.maps.v[i - 1].path &&
		    !strcmp(ap->maps.maps.v[i - 1].path, m->path))
			continue;
		if (jit_try_map(j, e, ap, m, root, now_ns))
			return;
	}
}

/* Whether the runtime of @e claims @pc (@m: its mapping, or NULL). */
static bool jit_claims(const struct jit_proc *e, const struct agent_map *m, uint64_t pc)
{
	for (size_t i = 0; i < e->att.nranges; i++)
		if (pc >= e->att.ranges[i].lo && pc < e->att.ranges[i].hi)
			return true;
	/*
	 * The same ranges in another mapping of the attached file, by ELF
	 * address: node 20's V8 maps its embedded
	 * builtins a second time into its code range, from the file
	 * (CodeRange::RemapEmbeddedBuiltins), and runs them from there.
	 */
	if (m && m->kind == AGENT_MAP_FILE && m->normalized && m->path && e->file[0] &&
	    !strcmp(m->path, e->file)) {
		uint64_t va = agent_map_vaddr(m, pc);

		for (size_t i = 0; i < e->att.nranges; i++)
			if (va >= e->att.ranges[i].lo - e->file_bias &&
			    va < e->att.ranges[i].hi - e->file_bias)
				return true;
	}
	return e->att.anon_exec && m && m->kind == AGENT_MAP_ANON;
}

bool agent_jit_has(const struct agent_jit *j, uint32_t pid)
{
	const struct jit_proc *e = j ? jit_find(j, pid) : NULL;

	return e && e->ops;
}

int agent_jit_step(struct agent_jit *j, const struct agent_proc *ap, const struct agent_map *m,
		   const struct agent_jit_stack *stk, const struct agent_jit_regs *r, bool leaf,
		   struct agent_jit_regs *caller, struct agent_jit_frame *f)
{
	struct jit_proc *e = j ? jit_find(j, ap->pid) : NULL;
	struct agent_jit_stats *st;
	uint64_t lookup = leaf ? r->pc : r->pc - 1;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!e || !e->ops || !jit_claims(e, m, lookup))
		return -ENOENT;
	rc = e->ops->step(e->att.priv, &e->mem, stk, r, leaf, caller, f);
	if (rc == -ENOENT)
		return rc;
	if ((st = jit_stats_of(j, e))) {
		if (rc)
			st->step_failed++;
		else
			st->frames++;
	}
	if (rc)
		memset(f, 0, sizeof(*f));
	return rc;
}

int agent_jit_name(struct agent_jit *j, const struct agent_proc *ap,
		   const struct agent_jit_frame *f, struct agent_interp_name *out, size_t max,
		   const char **frame_type)
{
	struct jit_proc *e = j ? jit_find(j, ap->pid) : NULL;
	struct agent_jit_stats *st;
	int rc;

	if (!e || !e->ops || f->kind == AGENT_JIT_NONE || !max)
		return -ENOENT;
	*frame_type = e->ops->name;
	rc = e->ops->name_frame(e->att.priv, &e->mem, f, out, max);
	if (rc == 0)
		rc = -PROF_ECORRUPT; /* a runtime must name at least one frame */
	if (rc > (int)max)
		rc = (int)max;
	if ((st = jit_stats_of(j, e))) {
		if (rc > 0)
			st->named++;
		else if (rc == -ESTALE)
			st->stale++;
		else if ((rc == -EFAULT || rc == -ESRCH) && agent_proc_gone(ap->pid))
			st->exited++;
		else if (rc == -EFAULT || rc == -ESRCH)
			st->read_failed++;
		else
			st->corrupt++;
	}
	return rc;
}

void agent_jit_count_sample(struct agent_jit *j, uint32_t pid, bool all_named)
{
	struct jit_proc *e = j ? jit_find(j, pid) : NULL;
	struct agent_jit_stats *st;

	if (!e || !e->ops || !(st = jit_stats_of(j, e)))
		return;
	st->samples++;
	st->samples_named += all_named;
}

size_t agent_jit_get_stats(const struct agent_jit *j, struct agent_jit_stats *out, size_t max)
{
	size_t n = j ? PROF_MIN(j->nstats, max) : 0;

	if (n)
		memcpy(out, j->stats, n * sizeof(*out));
	return n;
}

const char *agent_jit_unsupported(const struct agent_jit *j, uint32_t pid)
{
	const struct jit_proc *e = j ? jit_find(j, pid) : NULL;

	return e && e->refused ? e->why : NULL;
}
