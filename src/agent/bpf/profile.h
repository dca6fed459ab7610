/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * profile.h - what profile.bpf.c and the agent's user space share: the
 * events sent over the ring buffer, the keys of the targeting maps and
 * the names of the per-CPU counters (bcc libbpf-tools profile.h).
 *
 * Events (every record starts with a __u32 kind):
 *   - PROFILE_EV_CPU: one per cpu-clock tick of a task that is not idle,
 *     not the agent and not filtered out: kernel and user stacks as raw
 *     instruction pointers, leaf first, as bpf_get_stack() returns them
 *     (frame-pointer unwinding for user space). With user stack copies
 *     on (PROFILE_F_STACK_COPY), the event is a struct profile_event_ext:
 *     the same header plus the user registers and the top of the user
 *     stack, for unwinding with .eh_frame in user space (unwind.h).
 *   - PROFILE_EV_OFFCPU: a thread that slept for at least the threshold
 *     returned from the syscall it slept in: @value is how long (ns), the
 *     user stack the one it slept in; no kernel stack here: that came
 *     just before as a PROFILE_EV_OFFCPU_KSTACK (struct
 *     profile_kstack_event) with the same tid and switch-in time (@aux).
 *   - PROFILE_EV_EXEC / PROFILE_EV_EXIT (struct profile_proc_event): a
 *     process called execve / its main thread exited, so user space can
 *     snapshot /proc/PID before a short-lived process is gone, and drop
 *     what it cached for a pid that no longer exists.
 *   - PROFILE_EV_LIBS (struct profile_libs_event): the dynamic loader of a
 *     process finished mapping its libraries (at startup or dlopen): the
 *     load bias and path of each, from its r_debug link map, so user
 *     space knows where libc is even in a process gone before it could
 *     read /proc/PID/maps.
 *   - PROFILE_EV_INTERP (struct profile_interp_event): the frames of an
 *     interpreter's own stack (Python, Ruby, PHP) for the sample of the
 *     same thread and time that follows it at once, as raw words (an
 *     object address, an instruction offset, a check value) that user
 *     space names from the process's memory (interp.h). Sent only for
 *     processes user space registered in "interp_procs".
 *   - PROFILE_EV_CTX (struct profile_ctx_event): the trace context of the
 *     thread for the sample (on- or off-CPU) of the same thread and time
 *     that follows it at once: the current goroutine's pprof labels, raw,
 *     and/or the OpenTelemetry thread-context record's trace and span
 *     IDs. Sent only for processes user space registered in "ctx_procs",
 *     and only when the thread has a context.
 * Counts are frame counts, or a negative errno from bpf_get_stack
 * (-EFAULT when the user stack could not be read).
 *
 * The layout is an ABI between the two halves only (both are built from
 * this header in one build), never stored or sent anywhere.
 */
#ifndef PROF_AGENT_BPF_PROFILE_H
#define PROF_AGENT_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* perf_event_max_stack's default; bpf_get_stack fills at most this many. */
#define PROFILE_MAX_FRAMES  127
#define PROFILE_COMM_LEN    16
#define PROFILE_PATH_LEN    256
#define PROFILE_EXE_KEY_LEN 32 /* executable names longer than 31 bytes are cut to 31 */
/* Bytes of user stack copied from the stack pointer (a power of two). */
#define PROFILE_STACK_COPY 16384

enum profile_event_kind {
	PROFILE_EV_CPU = 1,
	PROFILE_EV_OFFCPU = 2,
	PROFILE_EV_EXEC = 3,
	PROFILE_EV_EXIT = 4,
	PROFILE_EV_OFFCPU_KSTACK = 5,
	PROFILE_EV_LIBS = 6,
	PROFILE_EV_INTERP = 7,
	PROFILE_EV_CTX = 8,
};

/* profile_event.flags */
#define PROFILE_F_USTACK_TRUNCATED (1u << 0) /* the user stack filled all PROFILE_MAX_FRAMES */
#define PROFILE_F_STACK_COPY	   (1u << 1) /* a struct profile_event_ext */
#define PROFILE_F_KTHREAD	   (1u << 2) /* a kernel thread: no user stack */

/*
 * The image a process runs, as mm_struct holds it: an exec replaces all
 * three, and /proc/PID/stat shows them (proc(5) fields 26 startcode, 27
 * endcode, 47 start_brk), so user space can tell a sample of a replaced
 * image from one of the image /proc describes. start_brk tells apart two
 * non-PIE executables with one code layout (brk is randomized per exec
 * with ASLR). All 0 for a task without an mm (kernel thread, exiting).
 */
struct profile_image {
	__u64 start_code, end_code, start_brk;
};

struct profile_event {
	__u32 kind;    /* PROFILE_EV_CPU or PROFILE_EV_OFFCPU */
	__u32 flags;   /* PROFILE_F_* */
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 value;   /* PROFILE_EV_OFFCPU: ns off CPU; 0 otherwise */
	__u64 aux;     /* PROFILE_EV_OFFCPU: switch-in time, joins PROFILE_EV_OFFCPU_KSTACK */
	struct profile_image img; /* the image the task ran (all 0 when it had no mm) */
	__u32 pid;		  /* tgid (process id in the root pid namespace) */
	__u32 tid;		  /* thread id */
	__u32 cpu;
	__s32 kstack_n;		     /* kernel frames in @kstack, or -errno */
	__s32 ustack_n;		     /* user frames in @ustack, or -errno */
	char comm[PROFILE_COMM_LEN]; /* thread name */
	__u64 kstack[PROFILE_MAX_FRAMES];
	__u64 ustack[PROFILE_MAX_FRAMES];
};

/*
 * struct profile_event_ext - a profile_event with the user registers at
 * the sample and @stack_len bytes of user stack starting at @sp (0 when it
 * could not be read). x86-64 only: @ip, @sp, @bp are rip, rsp, rbp.
 */
struct profile_event_ext {
	struct profile_event ev;
	__u64 ip, sp, bp;
	__u64 r13; /* HotSpot's bytecode pointer in its interpreter (agent/jit_hotspot.c) */
	__u32 stack_len;
	__u32 pad;
	__u8 stack[PROFILE_STACK_COPY];
};

struct profile_kstack_event {
	__u32 kind; /* PROFILE_EV_OFFCPU_KSTACK */
	__u32 tid;
	__u64 in_ns;	/* switch-in time (bpf_ktime_get_ns) */
	__s32 kstack_n; /* frames, or -errno */
	__u32 pad;
	__u64 kstack[PROFILE_MAX_FRAMES];
};

struct profile_proc_event {
	__u32 kind; /* PROFILE_EV_EXEC or PROFILE_EV_EXIT */
	__u32 pid;  /* tgid */
	__u64 time_ns;
	struct profile_image img; /* EXEC: the new image (start_code: its lowest code address) */
	__u64 exe_ino;		  /* EXEC: the executable's inode number ... */
	__u32 exe_dev;		  /* ... and device (kernel dev_t: major << 20 | minor) */
	__u32 ppid;		  /* EXEC: the parent's tgid */
	__u32 mnt_ns;		  /* EXEC: inode of its mount namespace (/proc/PID/ns/mnt) */
	__u32 pad;
	char comm[PROFILE_COMM_LEN];
	char filename[PROFILE_PATH_LEN]; /* EXEC: the path given to execve; "" for EXIT */
};

/*
 * Interpreter unwinding (interp.h has the design). User space writes one
 * struct profile_interp_proc per process that runs a known interpreter
 * into the hash map "interp_procs" (key: tgid); the sampling program then
 * tail-calls the runtime's program (prog array "interp_progs", index =
 * enum profile_runtime), which walks the interpreter's frame list and
 * sends a PROFILE_EV_INTERP event just before the sample's own event.
 */
enum profile_runtime {
	PROFILE_RT_NONE = 0,
	PROFILE_RT_PYTHON = 1,
	PROFILE_RT_RUBY = 2,
	PROFILE_RT_PHP = 3,
	PROFILE_RT_MAX = 4,
};

#define PROFILE_INTERP_MAX_FRAMES 96 /* interpreter frames per sample */
#define PROFILE_INTERP_ADDRS	  4
#define PROFILE_INTERP_OFFS	  24
#define PROFILE_INTERP_OFF_NONE	  0xffff /* an offset that does not apply to this version */

/*
 * struct profile_interp_proc - what a runtime's BPF walker needs about one
 * process: @runtime (enum profile_runtime), @flags (per runtime), runtime
 * addresses of the interpreter's globals (@addr) and structure offsets
 * (@off), both indexed by the runtime's own enum (interp_<runtime>.h on
 * the user side, bpf/interp_<runtime>.h on the BPF side).
 */
struct profile_interp_proc {
	__u32 runtime;
	__u32 flags;
	__u64 addr[PROFILE_INTERP_ADDRS];
	__u16 off[PROFILE_INTERP_OFFS];
};

/* profile_interp_frame.flags */
#define PROFILE_IF_ENTRY (1u << 0) /* the outermost frame of one interpreter-loop activation */
#define PROFILE_IF_CFUNC (1u << 1) /* a native function the interpreter shows as a frame */

/*
 * struct profile_interp_frame - one interpreter frame, raw: @addr the
 * long-lived object naming it (Python code object, Ruby iseq or method
 * entry, PHP zend_function), @aux where in it (Python: instruction index
 * in code units; PHP: the line; Ruby: the pc), @check a value read from
 * the object in BPF that user space compares with its own read, so an
 * object freed and reused at the same address since is never named after
 * the new one; @obj2 a second object found at sample time (Ruby: the
 * frame's method entry, 0 = none; 0 for other runtimes).
 */
struct profile_interp_frame {
	__u64 addr;
	__u64 aux;
	__u32 check;
	__u32 flags;
	__u64 obj2;
};

/* profile_interp_event.err: why a walk stopped before its bottom frame (0: it did not). */
enum profile_interp_err {
	PROFILE_IE_OK = 0,
	PROFILE_IE_READ = 1,	 /* a read of interpreter memory failed */
	PROFILE_IE_BAD_OBJ = 2,	 /* a frame's object was not of the expected type */
	PROFILE_IE_TOO_DEEP = 3, /* more than PROFILE_INTERP_MAX_FRAMES frames */
};

struct profile_interp_event {
	__u32 kind; /* PROFILE_EV_INTERP */
	__u32 tid;
	__u64 time_ns; /* the time_ns of the sample event it belongs to */
	__u32 runtime; /* enum profile_runtime */
	__u32 n;       /* frames used in @frames, leaf first */
	__u32 err;     /* enum profile_interp_err */
	__u32 pad;
	struct profile_interp_frame frames[PROFILE_INTERP_MAX_FRAMES];
};

/*
 * Trace context (agent/tracectx.h has the design). User space writes one
 * struct profile_ctx_proc per process that publishes a context into the
 * hash map "ctx_procs" (key: tgid); the sampling programs read the
 * thread's context from its TLS (the thread pointer is
 * task->thread.fsbase on x86-64) and send a PROFILE_EV_CTX event just
 * before the sample's own event.
 */
#define PROFILE_CTX_GO	   (1u << 0) /* Go: TLS g -> m -> curg -> labels */
#define PROFILE_CTX_GO_MAP (1u << 1) /* Go <= 1.23: labels are a map[string]string, else a slice */
#define PROFILE_CTX_OTEL   (1u << 2) /* OTel thread context: TLS otel_thread_ctx_v1 -> record */
/*
 * With PROFILE_CTX_OTEL: otel_thread_ctx_v1 is in the TLS block of
 * module @otel_mod (a shared library's general-dynamic TLS), at
 * @otel_tls_off in that block: BPF walks the thread's DTV (glibc x86-64:
 * tcbhead_t.dtv at TP + 8; dtv[-1] its length; dtv[modid] 16-byte
 * {block, to_free}, block -1 or 0 while not allocated for the thread).
 */
#define PROFILE_CTX_OTEL_DTV (1u << 3)

struct profile_ctx_proc {
	__u32 flags;	 /* PROFILE_CTX_* */
	__u16 go_m;	 /* runtime.g.m */
	__u16 go_curg;	 /* runtime.m.curg */
	__u16 go_labels; /* runtime.g.labels (a pointer to the labels) */
	__u16 pad;
	__u32 otel_mod;	  /* with PROFILE_CTX_OTEL_DTV: the TLS module ID */
	__s64 go_tls_off; /* where the g pointer is, from the thread pointer */
	/* where otel_thread_ctx_v1 (a record pointer) is, from the thread pointer (or DTV block) */
	__s64 otel_tls_off;
};

#define PROFILE_CTX_LABELS 10 /* goroutine labels per sample */
#define PROFILE_CTX_KEY	   16 /* bytes kept of a label's key ... */
#define PROFILE_CTX_VAL	   48 /* ... and of its value */

/* One goroutine label: @klen/@vlen its full lengths (cut at 255), the first bytes in @key/@val. */
struct profile_ctx_label {
	__u8 klen, vlen;
	char key[PROFILE_CTX_KEY];
	char val[PROFILE_CTX_VAL];
};

/* profile_ctx_event.flags */
#define PROFILE_CTXF_OTEL      (1u << 0) /* @trace_id/@span_id from a valid OTel record */
#define PROFILE_CTXF_GO_MORE   (1u << 1) /* the goroutine had more labels than were read */
#define PROFILE_CTXF_GO_LABELS (1u << 2) /* the goroutine had labels (@n of them read) */
#define PROFILE_CTXF_GO_IDS    (1u << 3) /* @ids: trace_id / span_id looked for past @labels */

/*
 * Labels past the PROFILE_CTX_LABELS read in order are searched (up to
 * PROFILE_CTX_ID_SCAN of them) for the two that make the link, which go
 * to @ids (klen 0: not found).
 */
#define PROFILE_CTX_ID_SCAN 64

struct profile_ctx_event {
	__u32 kind; /* PROFILE_EV_CTX */
	__u32 tid;
	__u64 time_ns;		       /* the time_ns of the sample event it belongs to */
	__u32 flags;		       /* PROFILE_CTXF_* */
	__u32 n;		       /* labels used in @labels */
	__u8 trace_id[16], span_id[8]; /* big-endian, as the record holds them */
	struct profile_ctx_label labels[PROFILE_CTX_LABELS];
	struct profile_ctx_label ids[2]; /* with PROFILE_CTXF_GO_IDS: trace_id, span_id */
};

#define PROFILE_MAX_LIBS 32

/* One entry of the loader's link map (glibc <link.h> struct link_map). */
struct profile_lib {
	__u64 l_addr;		     /* load bias: runtime address = ELF vaddr + l_addr */
	char name[PROFILE_PATH_LEN]; /* path as the loader opened it; "" = the executable */
};

struct profile_libs_event {
	__u32 kind; /* PROFILE_EV_LIBS */
	__u32 pid;
	__u64 time_ns;
	__u32 n; /* entries used in @libs */
	__u32 pad;
	struct profile_lib libs[PROFILE_MAX_LIBS];
};

/* Targeting (map "exe_filter" / "cgroup_filter" values; rodata filter_flags). */
enum profile_verdict {
	PROFILE_V_UNKNOWN = 0, /* not decided yet (never stored) */
	PROFILE_V_INCLUDE = 1,
	PROFILE_V_EXCLUDE = 2,
	PROFILE_V_NOMATCH = 3,
};
#define PROFILE_FILTER_INCLUDE_EXE    (1u << 0)
#define PROFILE_FILTER_EXCLUDE_EXE    (1u << 1)
#define PROFILE_FILTER_INCLUDE_CGROUP (1u << 2)
#define PROFILE_FILTER_EXCLUDE_CGROUP (1u << 3)
/* Cgroup rules match a task's cgroup or any ancestor up to this depth. */
#define PROFILE_CGROUP_MAX_LEVEL 16

/*
 * Value of "verdicts" (by tgid): the executable verdict and the address
 * space it was decided for. An exec installs the new mm (and its
 * exe_file) before sched_process_exec fires, so ticks in between must not
 * use the old image's verdict: a verdict counts only while task->mm is
 * still @mm, or for a task with no mm any more (exiting: exit_mm ran).
 * When the last thread exits, @mm becomes 0 and the entry stays (LRU):
 * the exiting task is still judged by its image.
 */
struct profile_exe_verdict {
	__u64 mm;
	__u8 verdict; /* enum profile_verdict */
	__u8 pad[7];
};

/* Key of "exe_filter": the executable's file name, zero padded. */
struct profile_exe_key {
	char name[PROFILE_EXE_KEY_LEN];
};

/*
 * Per-CPU counters (array map "stats", one __u64 per CPU and index).
 * Every way a program gives up an event has its own index, so a lost
 * sample is never silent.
 */
enum profile_stat {
	PROFILE_STAT_SAMPLES = 0,	       /* CPU events submitted to the ring buffer */
	PROFILE_STAT_IDLE = 1,		       /* CPU tick skipped: the idle task (pid 0) */
	PROFILE_STAT_SELF = 2,		       /* CPU tick skipped: the agent's own threads */
	PROFILE_STAT_RINGBUF_FULL = 3,	       /* CPU event dropped: no room in the ring buffer */
	PROFILE_STAT_KSTACK_ERR = 4,	       /* kernel stack unreadable (event still sent) */
	PROFILE_STAT_USTACK_ERR = 5,	       /* user stack unreadable (event still sent) */
	PROFILE_STAT_FILTERED = 6,	       /* CPU tick skipped: excluded by targeting */
	PROFILE_STAT_USTACK_TRUNCATED = 7,     /* user stack hit PROFILE_MAX_FRAMES (event sent) */
	PROFILE_STAT_STACK_COPY_ERR = 8,       /* user stack bytes unreadable (event still sent) */
	PROFILE_STAT_OFFCPU_SAMPLES = 9,       /* off-CPU events submitted */
	PROFILE_STAT_OFFCPU_SHORT = 10,	       /* back on CPU sooner than the threshold */
	PROFILE_STAT_OFFCPU_UNTRACKED = 11,    /* a syscall returned without a recorded sleep */
	PROFILE_STAT_OFFCPU_MAP_FULL = 12,     /* switch-out not recorded: map update failed */
	PROFILE_STAT_OFFCPU_RINGBUF_FULL = 13, /* off-CPU event dropped: ring buffer full */
	PROFILE_STAT_OFFCPU_SKIP_IDLE = 14,    /* switch-out of the idle task */
	PROFILE_STAT_OFFCPU_SKIP_SELF = 15,    /* switch-out of the agent */
	PROFILE_STAT_OFFCPU_SKIP_KTHREAD = 16, /* switch-out of a kernel thread */
	PROFILE_STAT_OFFCPU_SKIP_EXITING = 17, /* final switch-out of an exiting thread */
	PROFILE_STAT_OFFCPU_FILTERED = 18,     /* switch-out excluded by targeting */
	PROFILE_STAT_PROC_EVENTS = 19,	       /* exec/exit events submitted */
	PROFILE_STAT_PROC_RINGBUF_FULL = 20,   /* exec/exit event dropped: ring buffer full */
	PROFILE_STAT_PROC_FILTERED = 21,       /* exec of an excluded process: no event */
	PROFILE_STAT_PROC_SELF = 22,	       /* exec/exit of the agent itself: no event */
	PROFILE_STAT_THREAD_EXIT = 23, /* a thread other than the process's last exited: no event */
	PROFILE_STAT_VERDICT_UPDATE_ERR = 24,	 /* targeting verdict not cached (decided again) */
	PROFILE_STAT_OFFCPU_STALE = 25,		 /* slept outside the returning syscall: not sent */
	PROFILE_STAT_OFFCPU_SKIP_PREEMPTED = 26, /* switch-out of a runnable (preempted) thread */
	PROFILE_STAT_OFFCPU_KSTACK_LOST = 27,  /* off-CPU kernel stack not sent: ring buffer full */
	PROFILE_STAT_LIBS_EVENTS = 28,	       /* link-map events submitted */
	PROFILE_STAT_LIBS_NOT_READY = 29,      /* loader hook while it is still mapping: skipped */
	PROFILE_STAT_LIBS_READ_ERR = 30,       /* r_debug unreadable: skipped */
	PROFILE_STAT_LIBS_RINGBUF_FULL = 31,   /* link-map event dropped: ring buffer full */
	PROFILE_STAT_LIBS_FILTERED = 32,       /* loader hook in an excluded process */
	PROFILE_STAT_INTERP_EVENTS = 33,       /* interpreter stacks sent */
	PROFILE_STAT_INTERP_NO_THREAD = 34,    /* no interpreter thread state for the thread */
	PROFILE_STAT_INTERP_RINGBUF_FULL = 35, /* interpreter stack dropped: ring buffer full */
	PROFILE_STAT_INTERP_TAILCALL_ERR = 36, /* runtime program missing: native stack only */
	PROFILE_STAT_INTERP_READ_ERR = 37,     /* walk stopped at an unreadable frame */
	PROFILE_STAT_INTERP_BAD_OBJ = 38,      /* walk stopped at a frame of the wrong type */
	PROFILE_STAT_INTERP_TOO_DEEP = 39,     /* walk stopped at PROFILE_INTERP_MAX_FRAMES */
	PROFILE_STAT_CTX_EVENTS = 40,	       /* trace contexts sent */
	PROFILE_STAT_CTX_NONE = 41,	       /* registered process, thread without a context */
	PROFILE_STAT_CTX_READ_ERR = 42,	       /* a context pointer or label unreadable */
	PROFILE_STAT_CTX_RINGBUF_FULL = 43,    /* trace context dropped: ring buffer full */
	PROFILE_STAT_MAX = 44,
};

#endif
