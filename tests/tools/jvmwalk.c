// SPDX-License-Identifier: Apache-2.0
/*
 * jvmwalk.c - drive the HotSpot runtime (agent_jit_hotspot) against a
 * live JVM without the agent: attach to PID's libjvm.so, then, @rounds
 * times, stop each thread with ptrace (PTRACE_SEIZE + INTERRUPT), copy
 * 16 KiB of its stack from rsp, let it go, and unwind: frames whose pc
 * the runtime claims are stepped and named by it, others take one
 * frame-pointer step. Prints every stack (-v) and, per thread name,
 * the share of samples by leaf Java method (the innermost named frame
 * of the first JIT frame) and how many stacks reached a frame named
 * "*.main" (--root NAME to change).
 *
 *   jvmwalk [--layout] [-v] [--rounds N] [--interval-ms MS] [--thread NAME] PID
 *
 * --layout prints the offsets read from the tables and exits.
 * Exit status 0 when attached, 1 otherwise. Needs ptrace rights (root).
 */
#include "base/compat.h"
#include "agent/jit.h"
#include "agent/jit_hotspot.h"

#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JW_STACK  16384
#define JW_FRAMES 128
#define JW_LEAVES 256

struct jw_leaf {
	char name[160];
	uint64_t n;
};

static struct jw_leaf jw_leaves[JW_LEAVES];
static uint64_t jw_total, jw_rooted, jw_jit_steps, jw_step_failed, jw_named, jw_name_failed;

static void jw_count(const char *name)
{
	for (size_t i = 0; i < JW_LEAVES; i++) {
		if (!jw_leaves[i].n) {
			snprintf(jw_leaves[i].name, sizeof(jw_leaves[i].name), "%s", name);
			jw_leaves[i].n = 1;
			return;
		}
		if (!strcmp(jw_leaves[i].name, name)) {
			jw_leaves[i].n++;
			return;
		}
	}
}

static int jw_find_jvm(pid_t pid, char *path, size_t n, uint64_t *bias)
{
	char maps[64], line[1024];
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8], file[512];

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &lo, &hi, perms, &off, file) != 5)
			continue;
		if (strlen(file) < 10 || strcmp(file + strlen(file) - 10, "/libjvm.so"))
			continue;
		snprintf(path, n, "/proc/%d/root%s", (int)pid, file);
		*bias = lo - off;
		fclose(f);
		return 0;
	}
	fclose(f);
	return -ENOENT;
}

static void jw_thread_name(pid_t pid, pid_t tid, char *out, size_t n)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	out[0] = '\0';
	f = fopen(p, "r");
	if (!f)
		return;
	if (fgets(out, (int)n, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

static void jw_walk(void *priv, const struct agent_memreader *mem,
		    const struct user_regs_struct *ur, const uint8_t *stack, size_t len,
		    bool verbose, const char *root)
{
	struct agent_jit_stack stk = { ur->rsp, (uint32_t)len, stack, ur->r13 };
	struct agent_jit_regs r = { ur->rip, ur->rsp, ur->rbp, true }, c;
	bool leaf = true, leaf_named = false, rooted = false;

	for (int i = 0; i < JW_FRAMES && r.pc; i++) {
		struct agent_jit_frame f;
		struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];
		int rc = agent_jit_hotspot.step(priv, mem, &stk, &r, leaf, &c, &f), k;

		if (rc == -ENOENT) {
			uint64_t ra, bp;

			if (verbose)
				printf("  #%-2d %#" PRIx64 " native\n", i, r.pc);
			if (!r.bp_ok || r.bp < stk.base || r.bp + 16 > stk.base + len)
				break;
			memcpy(&bp, stack + (r.bp - stk.base), 8);
			memcpy(&ra, stack + (r.bp + 8 - stk.base), 8);
			c = (struct agent_jit_regs){ ra, r.bp + 16, bp, true };
		} else if (rc) {
			jw_step_failed++;
			if (verbose)
				printf("  #%-2d %#" PRIx64 " step failed: %s\n", i, r.pc,
				       strerror(-rc));
			break;
		} else {
			jw_jit_steps++;
			k = agent_jit_hotspot.name_frame(priv, mem, &f, nm, AGENT_JIT_MAX_INLINE);
			if (k < 0) {
				jw_name_failed++;
				if (verbose)
					printf("  #%-2d %#" PRIx64 " kind %u: not named: %s\n", i,
					       r.pc, f.kind, strerror(-k));
			}
			for (int j = 0; j < k; j++) {
				jw_named++;
				if (verbose)
					printf("  #%-2d %#" PRIx64 " %s%s (%s:%" PRId64 ") [%s]\n",
					       i, r.pc, j ? "  inlined in " : "", nm[j].function,
					       nm[j].file, nm[j].line,
					       f.kind == AGENT_JIT_INTERPRETED ? "interpreted"
					       : f.kind == AGENT_JIT_COMPILED  ? "compiled"
									       : "stub");
				if (root && strstr(nm[j].function, root))
					rooted = true;
			}
			if (k > 0 && !leaf_named && f.kind != AGENT_JIT_STUB) {
				jw_count(nm[0].function);
				leaf_named = true;
			}
		}
		if (c.sp <= r.sp && rc != -ENOENT)
			break;
		r = c;
		leaf = false;
	}
	if (!leaf_named)
		jw_count("(no Java frame)");
	jw_total++;
	jw_rooted += rooted;
}

static int jw_sample(pid_t pid, pid_t tid, void *priv, const struct agent_memreader *mem,
		     bool verbose, const char *root)
{
	struct user_regs_struct ur;
	uint8_t stack[JW_STACK];
	struct iovec l = { stack, sizeof(stack) }, rv;
	ssize_t got;
	int st;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) || waitpid(tid, &st, __WALL) < 0 ||
	    ptrace(PTRACE_GETREGS, tid, 0, &ur)) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -errno;
	}
	rv.iov_base = (void *)(uintptr_t)ur.rsp;
	rv.iov_len = sizeof(stack);
	got = process_vm_readv(pid, &l, 1, &rv, 1, 0);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	if (got <= 0)
		return -EFAULT;
	if (verbose)
		printf("thread %d pc %#llx sp %#llx bp %#llx\n", (int)tid, ur.rip, ur.rsp, ur.rbp);
	jw_walk(priv, mem, &ur, stack, (size_t)got, verbose, root);
	return 0;
}

/* Read the layout as attach does and compare it with agent_hs_jdk17_vm: 0 when the same. */
static int jw_layout(const char *path, uint64_t bias, const struct agent_memreader *mem)
{
	static const char *const names[] = {
		"gHotSpotVMStructs",
		"gHotSpotVMStructEntryArrayStride",
		"gHotSpotVMStructEntryTypeNameOffset",
		"gHotSpotVMStructEntryFieldNameOffset",
		"gHotSpotVMStructEntryOffsetOffset",
		"gHotSpotVMStructEntryAddressOffset",
		"gHotSpotVMTypes",
		"gHotSpotVMTypeEntryArrayStride",
		"gHotSpotVMTypeEntryTypeNameOffset",
		"gHotSpotVMTypeEntrySizeOffset",
	};
	struct agent_interp_sym syms[PROF_ARRAY_SIZE(names)];
	struct agent_hs_tables t;
	struct agent_hs_vm vm, ref;
	uint64_t *tv = &t.structs;
	char why[96];
	int rc;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++)
		syms[i] = (struct agent_interp_sym){ .name = names[i] };
	if (agent_interp_elf_symbols(path, syms, PROF_ARRAY_SIZE(syms)))
		return 1;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++)
		tv[i] = bias + syms[i].value;
	rc = agent_hs_vm_read(&t, mem, &vm, why, sizeof(why));
	if (rc) {
		printf("layout: %s (%s)\n", strerror(-rc), why);
		return 1;
	}
	agent_hs_jdk17_vm(&ref, vm.heaps);
	ref.vm_release = vm.vm_release;
	ref.vm_major = vm.vm_major;
	ref.vm_minor = vm.vm_minor;
	ref.vm_security = vm.vm_security;
	rc = memcmp(&vm, &ref, sizeof(vm)) != 0;
	printf("layout %s the JDK 17.0.15 one of agent_hs_jdk17_vm\n", rc ? "differs from" : "is");
	for (size_t i = 0; i < sizeof(vm) / 4; i++) {
		uint32_t a, b;

		memcpy(&a, (char *)&vm + 4 * i, 4);
		memcpy(&b, (char *)&ref + 4 * i, 4);
		if (a != b)
			printf("  word %zu: %u, not %u\n", i, a, b);
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *thread = "java", *root = ".main";
	bool layout = false, verbose = false;
	int rounds = 100, interval_ms = 20;
	char path[600];
	uint64_t bias = 0;
	pid_t pid;
	struct agent_jit_attach at = { 0 };
	struct agent_memreader mem;
	int rc, i;

	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--layout"))
			layout = true;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--interval-ms"))
			interval_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--thread"))
			thread = argv[++i];
		else if (!strcmp(argv[i], "--root"))
			root = argv[++i];
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: jvmwalk [--layout] [-v] [--rounds N] [--interval-ms MS] "
				"[--thread NAME] [--root NAME] PID\n");
		return 2;
	}
	pid = atoi(argv[argc - 1]);
	mem = (struct agent_memreader){ agent_procmem_read, (void *)(uintptr_t)pid };
	rc = jw_find_jvm(pid, path, sizeof(path), &bias);
	if (rc) {
		fprintf(stderr, "jvmwalk: no libjvm.so in %d\n", (int)pid);
		return 1;
	}
	rc = agent_jit_hotspot.attach(path, bias, &mem, &at);
	if (rc) {
		fprintf(stderr, "jvmwalk: attach: %s (%s)\n", strerror(-rc), at.version);
		return 1;
	}
	printf("attached: jvm %s\n", at.version);
	if (layout) {
		agent_jit_hotspot.free(at.priv);
		return jw_layout(path, bias, &mem);
	}
	for (int n = 0; n < rounds; n++) {
		char taskdir[64];
		struct dirent *de;
		DIR *d;

		snprintf(taskdir, sizeof(taskdir), "/proc/%d/task", (int)pid);
		d = opendir(taskdir);
		if (!d)
			break;
		while ((de = readdir(d))) {
			char name[32];
			pid_t tid = atoi(de->d_name);

			if (tid <= 0)
				continue;
			jw_thread_name(pid, tid, name, sizeof(name));
			if (strcmp(name, thread))
				continue;
			jw_sample(pid, tid, at.priv, &mem, verbose, root);
		}
		closedir(d);
		struct timespec ts = { interval_ms / 1000, (interval_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	printf("samples %" PRIu64 ", reaching %s %" PRIu64 "; jit steps %" PRIu64
	       ", failed %" PRIu64 "; named %" PRIu64 ", not %" PRIu64 "\n",
	       jw_total, root, jw_rooted, jw_jit_steps, jw_step_failed, jw_named, jw_name_failed);
	for (size_t k = 0; k < JW_LEAVES && jw_leaves[k].n; k++)
		printf("leaf %5.1f%% %s\n", 100.0 * (double)jw_leaves[k].n / (double)jw_total,
		       jw_leaves[k].name);
	agent_jit_hotspot.free(at.priv);
	return 0;
}
