// SPDX-License-Identifier: Apache-2.0
/*
 * v8walk.c - the V8 runtime (src/agent/jit_v8.c) on a live node process,
 * without the agent: attach to the node binary the process maps, then
 * stop its main thread COUNT times, INTERVAL_MS apart (ptrace), copy
 * 16 KiB of its stack from rsp as the BPF program does, and walk it:
 * agent_jit_v8's step for pcs in V8's code (anonymous executable
 * mappings, the embedded builtins and the copy of them V8 maps into
 * its code range), one frame-pointer step for other pcs. Each JavaScript
 * frame is named.
 *
 * usage: v8walk PID [COUNT [INTERVAL_MS]]
 * Prints each stack of the first 3 samples (leaf first), then per
 * function "self N name file:line" for the innermost JavaScript frame of
 * every sample, and "js/total" counts. Exit 1 when the runtime is not
 * found or refused.
 */
#include "base/compat.h"
#include "base/parse.h"
#include "agent/interp.h"
#include "agent/jit.h"
#include "agent/jit_v8.h"

#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define W_STACK (16u << 10)
#define W_DEPTH 128
#define W_MAPS	512
#define W_FNS	256
#define W_NAME	400

struct w_map {
	uint64_t lo, hi, off;
	bool exec, anon;
	char path[256];
};

static struct w_map maps[W_MAPS];
static size_t nmaps;

static int w_read_maps(uint32_t pid)
{
	char fn[64], line[512];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%u/maps", pid);
	if (!(f = fopen(fn, "r")))
		return -errno;
	nmaps = 0;
	while (fgets(line, sizeof(line), f) && nmaps < W_MAPS) {
		struct w_map *m = &maps[nmaps];
		char perm[8] = "", path[256] = "";
		unsigned long long lo, hi, off;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &lo, &hi, perm, &off, path) <
		    4)
			continue;
		m->lo = lo;
		m->hi = hi;
		m->off = off;
		m->exec = perm[2] == 'x';
		m->anon = !path[0];
		snprintf(m->path, sizeof(m->path), "%s", path);
		nmaps++;
	}
	fclose(f);
	return 0;
}

static const struct w_map *w_map_of(uint64_t pc)
{
	for (size_t i = 0; i < nmaps; i++)
		if (pc >= maps[i].lo && pc < maps[i].hi)
			return &maps[i];
	return NULL;
}

struct w_fn {
	char name[W_NAME];
	uint64_t n;
};

static struct w_fn fns[W_FNS];
static size_t nfns;

static void w_count(const char *name)
{
	for (size_t i = 0; i < nfns; i++)
		if (!strcmp(fns[i].name, name)) {
			fns[i].n++;
			return;
		}
	if (nfns < W_FNS) {
		snprintf(fns[nfns].name, W_NAME, "%s", name);
		fns[nfns++].n = 1;
	}
}

/* p_vaddr - p_offset of the first PT_LOAD of ELF file @path (0 when unreadable). */
static uint64_t w_load_delta(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t d = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return 0;
	if (fread(&eh, sizeof(eh), 1, f) == 1)
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			if (fseek(f, (long)(eh.e_phoff + (uint64_t)i * eh.e_phentsize), SEEK_SET) ||
			    fread(&ph, sizeof(ph), 1, f) != 1)
				break;
			if (ph.p_type == PT_LOAD) {
				d = ph.p_vaddr - ph.p_offset;
				break;
			}
		}
	fclose(f);
	return d;
}

int main(int argc, char **argv)
{
	uint64_t pid64, count = 1, interval = 10, total = 0, js = 0;
	struct agent_jit_attach att;
	struct agent_memreader mem;
	const struct w_map *node = NULL;
	uint64_t bias = 0, blob_copy_lo = 0, blob_copy_hi = 0;
	static uint8_t stack[W_STACK];
	uint32_t pid;
	char path[300];
	int rc;

	if (argc < 2 || parse_u64(argv[1], &pid64) || (argc > 2 && parse_u64(argv[2], &count)) ||
	    (argc > 3 && parse_u64(argv[3], &interval))) {
		fprintf(stderr, "usage: v8walk PID [COUNT [INTERVAL_MS]]\n");
		return 2;
	}
	pid = (uint32_t)pid64;
	mem.read = agent_procmem_read;
	mem.ctx = (void *)(uintptr_t)pid;
	if ((rc = w_read_maps(pid)))
		return fprintf(stderr, "v8walk: maps: %s\n", strerror(-rc)), 1;
	for (size_t i = 0; i < nmaps && !node; i++) {
		const char *b = strrchr(maps[i].path, '/');

		if (b && agent_jit_v8.match(b + 1))
			node = &maps[i];
	}
	if (!node)
		return fprintf(stderr, "v8walk: no node mapped\n"), 1;
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, node->path);
	bias = node->lo - node->off - w_load_delta(path);
	memset(&att, 0, sizeof(att));
	if ((rc = agent_jit_v8.attach(path, bias, &mem, &att)))
		return fprintf(stderr, "v8walk: attach: %d (%s)\n", rc, att.version), 1;
	printf("v8 %s, %zu range(s)", att.version, att.nranges);
	for (size_t i = 0; i < att.nranges; i++)
		printf(" [%#" PRIx64 ", %#" PRIx64 ")", att.ranges[i].lo, att.ranges[i].hi);
	/* V8 maps the embedded blob again inside its code range, from the file. */
	if (att.nranges) {
		const struct w_map *text = w_map_of(att.ranges[0].lo);
		uint64_t foff = text ? att.ranges[0].lo - text->lo + text->off : UINT64_MAX;

		for (size_t i = 0; i < nmaps; i++) {
			if (&maps[i] != text && !strcmp(maps[i].path, node->path) && maps[i].exec &&
			    maps[i].off == foff) {
				blob_copy_lo = maps[i].lo;
				blob_copy_hi = maps[i].lo + (att.ranges[0].hi - att.ranges[0].lo);
				printf(", copy [%#" PRIx64 ", %#" PRIx64 ")", blob_copy_lo,
				       blob_copy_hi);
			}
		}
	}
	printf("\n");
	if (ptrace(PTRACE_SEIZE, pid, 0, 0))
		return fprintf(stderr, "v8walk: seize: %s\n", strerror(errno)), 1;
	for (uint64_t s = 0; s < count; s++) {
		struct user_regs_struct ur;
		struct agent_jit_stack stk = { 0 };
		struct agent_jit_regs r, c;
		struct iovec l, rv;
		ssize_t got;
		bool leaf = true, named_js = false;
		int st;

		if (s)
			usleep((useconds_t)(interval * 1000));
		if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) || waitpid((pid_t)pid, &st, __WALL) < 0)
			break;
		if (ptrace(PTRACE_GETREGS, pid, 0, &ur)) {
			ptrace(PTRACE_CONT, pid, 0, 0);
			continue;
		}
		l.iov_base = stack;
		l.iov_len = W_STACK;
		rv.iov_base = (void *)(uintptr_t)ur.rsp;
		rv.iov_len = W_STACK;
		got = process_vm_readv((pid_t)pid, &l, 1, &rv, 1, 0);
		if (got < 0)
			got = 0;
		stk.base = ur.rsp;
		stk.len = (uint32_t)got;
		stk.bytes = stack;
		r.pc = ur.rip;
		r.sp = ur.rsp;
		r.bp = ur.rbp;
		r.bp_ok = true;
		total++;
		for (int d = 0; d < W_DEPTH && r.pc; d++) {
			const struct w_map *m = w_map_of(leaf ? r.pc : r.pc - 1);
			uint64_t pc = leaf ? r.pc : r.pc - 1;
			bool claimed = (m && m->anon && m->exec) ||
				       (pc >= blob_copy_lo && pc < blob_copy_hi);
			struct agent_jit_frame f;

			for (size_t i = 0; i < att.nranges; i++)
				claimed |= pc >= att.ranges[i].lo && pc < att.ranges[i].hi;
			if (claimed &&
			    !(rc = agent_jit_v8.step(att.priv, &mem, &stk, &r, leaf, &c, &f)) &&
			    f.kind != AGENT_JIT_NONE) {
				struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];
				int n = agent_jit_v8.name_frame(att.priv, &mem, &f, nm,
								AGENT_JIT_MAX_INLINE);

				for (int k = 0; k < n; k++) {
					char buf[W_NAME];

					snprintf(buf, sizeof(buf),
						 "%s %s:%" PRId64 " (from %" PRId64 ")",
						 nm[k].function, nm[k].file, nm[k].line,
						 nm[k].start_line);
					if (s < 3)
						printf("  %2d %s %s%s\n", d,
						       f.kind == AGENT_JIT_INTERPRETED ? "int"
										       : "jit",
						       buf, k ? " (inlined)" : "");
					if (!named_js) {
						char fnbuf[W_NAME];

						snprintf(fnbuf, sizeof(fnbuf), "%s %s",
							 nm[k].function, nm[k].file);
						w_count(fnbuf);
						named_js = true;
					}
				}
				if (n < 0 && s < 3)
					printf("  %2d name_frame %d\n", d, n);
			} else {
				if (s < 3)
					printf("  %2d %s %#" PRIx64 " %s%s\n", d,
					       claimed ? (rc ? "step-failed" : "v8-native")
						       : "native",
					       r.pc, m ? m->path : "?",
					       claimed && !rc && f.check ? " (typed)" : "");
				if (!claimed || rc) {
					/* one frame-pointer step */
					if (!r.bp_ok || r.bp < r.sp ||
					    agent_procmem_read(mem.ctx, r.bp + 8, &c.pc, 8) ||
					    agent_procmem_read(mem.ctx, r.bp, &c.bp, 8))
						break;
					c.sp = r.bp + 16;
					c.bp_ok = true;
				}
			}
			if (c.sp <= r.sp && !(c.sp == r.sp && c.pc != r.pc))
				break;
			r = c;
			leaf = false;
		}
		if (named_js)
			js++;
		if (s < 3)
			printf("--\n");
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
	ptrace(PTRACE_DETACH, pid, 0, 0);
	for (size_t i = 0; i < nfns; i++)
		printf("self %" PRIu64 " %s\n", fns[i].n, fns[i].name);
	printf("js/total %" PRIu64 "/%" PRIu64 "\n", js, total);
	agent_jit_v8.free(att.priv);
	return 0;
}
