// SPDX-License-Identifier: Apache-2.0
/*
 * symq.c - test and benchmark helper: symbolize addresses with profd's
 * symbolizer (symbolize/symbolizer.h), printing every frame of each
 * address's inline chain, innermost first, one line per frame:
 *
 *   ADDR <TAB> DEPTH <TAB> NAME <TAB> FILE:LINE <TAB> SOURCE
 *
 * (ADDR as given, FILE the base name, "??:0" when unknown; an address
 * with no answer prints "ADDR <TAB> - <TAB> ??").
 *
 *   symq [--store DIR] [--debug-root DIR] [--build-id ID] FILE ADDR...
 *       ADDRs are ELF virtual addresses of FILE (hex, 0x optional); FILE
 *       may be "" with --build-id (store / debug root only).
 *   symq --pid PID ADDR...
 *       ADDRs are runtime addresses in process PID: each is mapped to
 *       (file, file offset) through /proc/PID/maps, then to an ELF
 *       virtual address through the file's PT_LOAD segments, as the agent
 *       does.
 *   symq --bench [--print] FILE < ADDRS
 *       symbolize every address read from stdin twice (cold: fresh
 *       symbolizer; warm: memoized) and report the CPU times on stderr.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/parse.h"
#include "symbolize/debuginfo.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

static struct sym_frame frames[SYM_FRAMES_MAX];

/* Hex with an optional 0x; every character checked, at most 16 digits. */
static int parse_hex(const char *s, uint64_t *v)
{
	size_t n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	*v = 0;
	for (; s[n]; n++) {
		char c = s[n];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
						    : 16u;

		if (d == 16 || n >= 16)
			return -EINVAL;
		*v = *v << 4 | d;
	}
	return n ? 0 : -EINVAL;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void print_frames(const char *addr, int n)
{
	if (n <= 0) {
		printf("%s\t-\t??\n", addr);
		return;
	}
	for (int i = 0; i < n; i++)
		printf("%s\t%d\t%s\t%s:%u\t%s\n", addr, i, frames[i].name,
		       frames[i].file[0] ? base_name(frames[i].file) : "??", frames[i].line,
		       sym_source_name((enum sym_source)frames[i].source));
}

/* Runtime @addr in @pid -> (path, vaddr, build ID). */
static int resolve_pid(const char *pid, uint64_t addr, char *path, size_t pathsz, uint64_t *vaddr,
		       char *bid, size_t bidsz)
{
	char maps[64], line[8192];
	FILE *f;
	uint64_t off = 0;
	bool found = false;
	struct sym_elf *e = NULL;
	struct prof_err err;
	int rc;

	snprintf(maps, sizeof(maps), "/proc/%s/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], p[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &pgoff, p) <
		    5)
			continue;
		if (addr >= start && addr < end && p[0] == '/') {
			snprintf(path, pathsz, "%s", p);
			off = addr - start + pgoff;
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return -ENOENT;
	prof_err_init(&err);
	rc = sym_elf_open(path, &e, &err);
	if (rc)
		return rc;
	rc = sym_elf_offset_to_vaddr(e, off, vaddr);
	snprintf(bid, bidsz, "%s", sym_elf_build_id(e));
	sym_elf_free(e);
	return rc;
}

/* CPU seconds of this process: steadier than wall time on a busy machine. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int bench(const char *file, const char *build_id, bool print)
{
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0, named = 0;
	char line[128];

	while (fgets(line, sizeof(line), stdin)) {
		uint64_t a;

		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || parse_hex(line, &a))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[n++] = a;
	}
	struct symbolizer *s = symbolizer_new(8);
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);

	for (int pass = 0; pass < 2; pass++) {
		double t0, t1;

		t0 = now_s();
		named = 0;
		for (size_t i = 0; i < n; i++) {
			int k = symbolizer_lookup_frames(s, file, build_id, addrs[i], frames,
							 SYM_FRAMES_MAX);

			named += k > 0;
			if (print && pass == 0) {
				char a[32];

				snprintf(a, sizeof(a), "0x%" PRIx64, addrs[i]);
				print_frames(a, k);
			}
		}
		t1 = now_s();
		fprintf(stderr, "%s: %zu addresses, %zu named, %.3f s (%.0f ns/address)\n",
			pass == 0 ? "cold" : "warm", n, named, t1 - t0,
			n ? (t1 - t0) * 1e9 / (double)n : 0.0);
	}
	symbolizer_free(s);
	free(addrs);
	return 0;
}

int main(int argc, char **argv)
{
	const char *store_dir = NULL, *root = NULL, *build_id = "", *pid = NULL;
	struct sym_debuginfo *store = NULL;
	struct symbolizer *s;
	bool do_bench = false, print = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (!strcmp(argv[i], "--store") && i + 1 < argc)
			store_dir = argv[++i];
		else if (!strcmp(argv[i], "--debug-root") && i + 1 < argc)
			root = argv[++i];
		else if (!strcmp(argv[i], "--build-id") && i + 1 < argc)
			build_id = argv[++i];
		else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
			pid = argv[++i];
		else if (!strcmp(argv[i], "--bench"))
			do_bench = true;
		else if (!strcmp(argv[i], "--print"))
			print = true;
		else {
			fprintf(stderr, "symq: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (do_bench) {
		if (i >= argc)
			return 2;
		return bench(argv[i], build_id, print);
	}
	if (!pid && i >= argc) {
		fprintf(stderr, "usage: symq [--store DIR] [--debug-root DIR] [--build-id ID] FILE "
				"ADDR... | --pid PID ADDR...\n");
		return 2;
	}
	s = symbolizer_new(16);
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	if (root)
		symbolizer_set_debug_root(s, root);
	if (store_dir) {
		struct prof_err err;

		prof_err_init(&err);
		if (sym_debuginfo_open(store_dir, &store, &err)) {
			fprintf(stderr, "symq: %s\n", err.msg);
			return 1;
		}
		symbolizer_set_debuginfo(s, store);
	}
	const char *file = pid ? NULL : argv[i++];
	for (; i < argc; i++) {
		char path[4096], bid[256];
		uint64_t a, vaddr;
		int n;

		if (parse_hex(argv[i], &a)) {
			fprintf(stderr, "symq: bad address %s\n", argv[i]);
			return 2;
		}
		if (pid) {
			if (resolve_pid(pid, a, path, sizeof(path), &vaddr, bid, sizeof(bid))) {
				print_frames(argv[i], -1);
				continue;
			}
			n = symbolizer_lookup_frames(s, path, bid, vaddr, frames, SYM_FRAMES_MAX);
		} else {
			n = symbolizer_lookup_frames(s, file, build_id, a, frames, SYM_FRAMES_MAX);
		}
		print_frames(argv[i], n);
	}
	symbolizer_free(s);
	sym_debuginfo_free(store);
	return 0;
}
