// SPDX-License-Identifier: Apache-2.0
/* tracectx.c - trace context of samples: detection, BPF parameters, decoding (tracectx.h). */
#include "base/compat.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "agent/procmaps.h"
#include "agent/tracectx.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- decoding (input: bytes BPF read from another process) ---- */

/* @n hex digits of @s into @out (@n / 2 bytes); false unless all are hex. */
static bool ctx_hex(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i += 2) {
		int hi = parse_hex_digit((unsigned char)s[i]),
		    lo = parse_hex_digit((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static bool ctx_allowed(const char *key, const char *const *allow, size_t nallow)
{
	if (!allow)
		return true;
	for (size_t i = 0; i < nallow; i++)
		if (!strcmp(allow[i], key))
			return true;
	return false;
}

static bool ctx_nonzero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return true;
	return false;
}

/* Label @l of an event into @out: the link's IDs, or an attribute when @allow has it. */
static void ctx_decode_label(const struct profile_ctx_label *l, const char *const *allow,
			     size_t nallow, struct agent_tracectx_sample *out, bool *have_trace,
			     bool *have_span)
{
	size_t kl = l->klen, vl = PROF_MIN((size_t)l->vlen, (size_t)PROFILE_CTX_VAL);
	char key[PROFILE_CTX_KEY + 1];

	if (kl == 0 || kl > PROFILE_CTX_KEY || memchr(l->key, 0, kl) || memchr(l->val, 0, vl))
		return;
	memcpy(key, l->key, kl);
	key[kl] = '\0';
	if (!strcmp(key, "trace_id")) {
		if (l->vlen == 32 && ctx_hex(l->val, 32, out->trace_id))
			*have_trace = true;
		return;
	}
	if (!strcmp(key, "span_id")) {
		if (l->vlen == 16 && ctx_hex(l->val, 16, out->span_id))
			*have_span = true;
		return;
	}
	if (strcmp(key, "span_name") && !ctx_allowed(key, allow, nallow))
		return;
	/* A value cut inside a UTF-8 sequence loses that sequence's head too. */
	while (vl > 0 && !utf8_valid(l->val, vl))
		vl--;
	if (!utf8_valid(key, kl) || out->nattrs >= AGENT_TRACECTX_ATTRS)
		return;
	memcpy(out->attrs[out->nattrs].key, key, kl + 1);
	memcpy(out->attrs[out->nattrs].val, l->val, vl);
	out->attrs[out->nattrs].val[vl] = '\0';
	out->nattrs++;
}

bool agent_tracectx_decode(const struct profile_ctx_event *e, const char *const *allow,
			   size_t nallow, struct agent_tracectx_sample *out)
{
	bool have_trace = false, have_span = false;
	uint32_t n = PROF_MIN(e->n, (uint32_t)PROFILE_CTX_LABELS);

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < n; i++)
		ctx_decode_label(&e->labels[i], allow, nallow, out, &have_trace, &have_span);
	if (e->flags & PROFILE_CTXF_GO_IDS) {
		/* Found past the labels read in order; only the link's two are taken there. */
		for (size_t i = 0; i < PROF_ARRAY_SIZE(e->ids); i++) {
			const struct profile_ctx_label *l = &e->ids[i];

			if ((l->klen == 8 && !memcmp(l->key, "trace_id", 8)) ||
			    (l->klen == 7 && !memcmp(l->key, "span_id", 7)))
				ctx_decode_label(l, allow, nallow, out, &have_trace, &have_span);
		}
	}
	if ((e->flags & PROFILE_CTXF_OTEL) && ctx_nonzero(e->trace_id, sizeof(e->trace_id))) {
		/* The record is the one a tracer keeps current: it wins over labels. */
		memcpy(out->trace_id, e->trace_id, sizeof(out->trace_id));
		memcpy(out->span_id, e->span_id, sizeof(out->span_id));
		have_trace = have_span = true;
	}
	out->has_link = have_trace || have_span;
	if (!have_trace)
		memset(out->trace_id, 0, sizeof(out->trace_id));
	if (!have_span)
		memset(out->span_id, 0, sizeof(out->span_id));
	return out->has_link || out->nattrs;
}

#define GO_BUILDINFO_MAGIC "\xff Go buildinf:"
#define GO_BUILDINFO_HEAD  32

int agent_tracectx_go_version(const uint8_t *buf, size_t n, char *out, size_t max)
{
	uint64_t len = 0;
	size_t at = GO_BUILDINFO_HEAD;
	unsigned shift = 0;

	if (max)
		out[0] = '\0';
	if (n < GO_BUILDINFO_HEAD || memcmp(buf, GO_BUILDINFO_MAGIC, 14) || !(buf[15] & 2))
		return -PROF_EFORMAT; /* before Go 1.18 the strings were pointers */
	for (;;) {
		if (at >= n || shift > 28)
			return -PROF_EFORMAT;
		len |= (uint64_t)(buf[at] & 0x7f) << shift;
		if (!(buf[at++] & 0x80))
			break;
		shift += 7;
	}
	if (len > n - at || len < 3 || memcmp(buf + at, "go", 2))
		return -PROF_EFORMAT;
	if (len >= max)
		return -E2BIG;
	memcpy(out, buf + at, len);
	out[len] = '\0';
	return 0;
}

/*
 * Measured from the DWARF of the toolchains the tests build with
 * (runtime.g.m, runtime.m.curg, runtime.g.labels on linux/amd64):
 * Debian's go1.19.8 and go1.26.8. Other versions need DWARF.
 */
static const struct {
	int minor;
	uint16_t m, curg, labels;
} go_offsets[] = {
	{ 19, 48, 192, 360 },
	{ 26, 48, 184, 352 },
};

int agent_tracectx_go_table(int major, int minor, struct profile_ctx_proc *p)
{
	if (major != 1)
		return -ENOTSUP;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(go_offsets); i++) {
		if (go_offsets[i].minor != minor)
			continue;
		p->go_m = go_offsets[i].m;
		p->go_curg = go_offsets[i].curg;
		p->go_labels = go_offsets[i].labels;
		p->flags |= PROFILE_CTX_GO | (minor <= 23 ? PROFILE_CTX_GO_MAP : 0);
		return 0;
	}
	return -ENOTSUP;
}

/* ---- TLS of shared libraries (input: relocations and another process's GOT) ---- */

#define CTX_R_DTPMOD64 16 /* x86-64 psABI relocation types */
#define CTX_R_DTPOFF64 17
#define CTX_R_TPOFF64  18
#define CTX_R_TLSDESC  36

enum agent_tracectx_tls_kind agent_tracectx_tls_relocs(const void *rela, size_t n, uint32_t sym,
						       struct agent_tracectx_tlsref *ref)
{
	const uint8_t *b = rela;

	if (ref->kind == AGENT_TRACECTX_TLS_DESC)
		return ref->kind;
	/* One pair of GD slots may come from two sections: keep what was seen in ref. */
	bool mod = ref->kind == AGENT_TRACECTX_TLS_GD || ref->slot,
	     off = ref->kind == AGENT_TRACECTX_TLS_GD || ref->slot_off;

	for (size_t at = 0; at + 24 <= n; at += 24) {
		uint64_t r_offset, r_info;
		int64_t r_addend;
		uint32_t type;

		memcpy(&r_offset, b + at, 8);
		memcpy(&r_info, b + at + 8, 8);
		memcpy(&r_addend, b + at + 16, 8);
		if ((uint32_t)(r_info >> 32) != sym)
			continue;
		type = (uint32_t)r_info;
		if (type == CTX_R_TLSDESC) {
			*ref = (struct agent_tracectx_tlsref){ AGENT_TRACECTX_TLS_DESC, r_offset, 0,
							       r_addend };
			return ref->kind;
		}
		if (ref->kind == AGENT_TRACECTX_TLS_IE)
			continue;
		if (type == CTX_R_TPOFF64) {
			*ref = (struct agent_tracectx_tlsref){ AGENT_TRACECTX_TLS_IE, r_offset, 0,
							       r_addend };
			continue;
		}
		if (type == CTX_R_DTPMOD64 && !mod) {
			ref->slot = r_offset;
			mod = true;
		} else if (type == CTX_R_DTPOFF64 && !off) {
			ref->slot_off = r_offset;
			ref->addend = r_addend;
			off = true;
		}
		if (mod && off)
			ref->kind = AGENT_TRACECTX_TLS_GD;
	}
	return ref->kind;
}

#define CTX_STATIC_TLS_MAX (1LL << 30) /* static TLS is far smaller: a bigger "offset" is not one */
#define CTX_TLS_MODS_MAX   65535

/* A DTV location: module @mod, offset @off; -ENOENT unless it is @want and @mod is plausible. */
static int ctx_tls_dtv(uint64_t mod, uint64_t off, uint64_t want, struct profile_ctx_proc *p)
{
	if (mod == 0 || mod > CTX_TLS_MODS_MAX || off != want)
		return -ENOENT;
	p->otel_mod = (uint32_t)mod;
	p->otel_tls_off = (int64_t)off;
	p->flags |= PROFILE_CTX_OTEL | PROFILE_CTX_OTEL_DTV;
	return 0;
}

/* A static TLS location @off from the thread pointer; -ENOENT unless it is one. */
static int ctx_tls_static(int64_t off, struct profile_ctx_proc *p)
{
	if (off >= 0 || off < -CTX_STATIC_TLS_MAX)
		return -ENOENT;
	p->otel_tls_off = off;
	p->flags |= PROFILE_CTX_OTEL;
	p->flags &= ~PROFILE_CTX_OTEL_DTV;
	return 0;
}

int agent_tracectx_tls_locate(const struct agent_tracectx_tlsref *ref, uint64_t bias,
			      uint64_t value, const struct agent_memreader *mem,
			      struct profile_ctx_proc *p)
{
	uint64_t slot[2], want = value + (uint64_t)ref->addend;

	switch (ref->kind) {
	case AGENT_TRACECTX_TLS_DESC:
		if (mem->read(mem->ctx, ref->slot + bias, slot, sizeof(slot)))
			return -EFAULT;
		if (!slot[0])
			return -ENOENT;
		if ((int64_t)slot[1] < 0)
			return ctx_tls_static((int64_t)slot[1], p);
		/* _dl_tlsdesc_dynamic: arg -> {tls_index {module, offset}, gen_count} */
		if (mem->read(mem->ctx, slot[1], slot, sizeof(slot)))
			return -EFAULT;
		return ctx_tls_dtv(slot[0], slot[1], want, p);
	case AGENT_TRACECTX_TLS_IE:
		if (mem->read(mem->ctx, ref->slot + bias, slot, 8))
			return -EFAULT;
		return ctx_tls_static((int64_t)slot[0], p);
	case AGENT_TRACECTX_TLS_GD:
		if (mem->read(mem->ctx, ref->slot + bias, slot, 8) ||
		    mem->read(mem->ctx, ref->slot_off + bias, slot + 1, 8))
			return -EFAULT;
		return ctx_tls_dtv(slot[0], slot[1], want, p);
	case AGENT_TRACECTX_TLS_NONE:
		break;
	}
	return -ENOENT;
}

/* ---- detection (input: the process's executable) ---- */

/* Leading decimal digits of *@s (at most 3), advancing *@s; -1 when there are none. */
static int ctx_digits(const char **s)
{
	int v = 0, n = 0;

	while (**s >= '0' && **s <= '9' && n < 3) {
		v = v * 10 + (**s - '0');
		(*s)++;
		n++;
	}
	return n ? v : -1;
}

/* "go1.19.8" / "go1.26rc1" -> 1, 19; false when it is not a release name. */
static bool ctx_go_parse(const char *v, int *major, int *minor)
{
	if (strncmp(v, "go", 2))
		return false;
	v += 2;
	*major = ctx_digits(&v);
	if (*major < 1 || *v++ != '.')
		return false;
	*minor = ctx_digits(&v);
	return *minor >= 0;
}

/* The data_member_location of member @name of struct DIE @st, or -1. */
static long ctx_dw_member(Dwarf_Die *st, const char *name)
{
	Dwarf_Die c;
	Dwarf_Attribute a;
	Dwarf_Word off;

	if (dwarf_child(st, &c) != 0)
		return -1;
	do {
		const char *n;

		if (dwarf_tag(&c) != DW_TAG_member || !(n = dwarf_diename(&c)) || strcmp(n, name))
			continue;
		if (!dwarf_attr(&c, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &off))
			return -1;
		return off <= UINT16_MAX ? (long)off : -1;
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

/* runtime.g.m, runtime.m.curg, runtime.g.labels from the DWARF of @elf; 0 or -ENOENT. */
static int ctx_go_dwarf(Elf *elf, struct profile_ctx_proc *p)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next;
	size_t hsize;
	long m = -1, curg = -1, labels = -1;
	bool got_g = false, got_m = false;

	if (!dw)
		return -ENOENT;
	while (!(got_g && got_m) && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, c;

		const char *cun;

		/* The Go linker puts a package's types in its own CU ("runtime"). */
		if (dwarf_offdie(dw, off + hsize, &cu) && (cun = dwarf_diename(&cu)) &&
		    !strcmp(cun, "runtime") && dwarf_child(&cu, &c) == 0) {
			do {
				const char *n;

				if (dwarf_tag(&c) != DW_TAG_structure_type ||
				    !(n = dwarf_diename(&c)))
					continue;
				if (!got_g && !strcmp(n, "runtime.g")) {
					m = ctx_dw_member(&c, "m");
					labels = ctx_dw_member(&c, "labels");
					got_g = true;
				} else if (!got_m && !strcmp(n, "runtime.m")) {
					curg = ctx_dw_member(&c, "curg");
					got_m = true;
				}
			} while (!(got_g && got_m) && dwarf_siblingof(&c, &c) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	if (m < 0 || curg < 0 || labels < 0)
		return -ENOENT;
	p->go_m = (uint16_t)m;
	p->go_curg = (uint16_t)curg;
	p->go_labels = (uint16_t)labels;
	return 0;
}

/* The section named @want, or NULL. */
static Elf_Scn *ctx_section(Elf *elf, const char *want, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, sh) && (name = elf_strptr(elf, shstrndx, sh->sh_name)) &&
		    !strcmp(name, want))
			return scn;
	}
	return NULL;
}

/* st_value of TLS symbol @want in .symtab or .dynsym; 0 or -ENOENT. */
static int ctx_tls_symbol(Elf *elf, const char *want, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_TLS ||
			    sym.st_shndx == SHN_UNDEF ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
			    strcmp(name, want))
				continue;
			*value = sym.st_value;
			return 0;
		}
	}
	return -ENOENT;
}

/* The executable's PT_TLS size and alignment; false when it has none. */
static bool ctx_pt_tls(Elf *elf, uint64_t *memsz, uint64_t *align, uint64_t *vaddr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_TLS) {
			*memsz = ph.p_memsz;
			*align = ph.p_align ? ph.p_align : 1;
			*vaddr = ph.p_vaddr;
			return true;
		}
	}
	return false;
}

/*
 * The offset from the thread pointer of the executable's TLS block
 * (x86-64 TLS variant II: the block ends at the thread pointer, its
 * start aligned; glibc _dl_determine_tlsoffset for the first module).
 */
static int64_t ctx_exe_tls_base(uint64_t memsz, uint64_t align, uint64_t vaddr)
{
	uint64_t first = (0 - vaddr) & (align - 1);

	return -(int64_t)((memsz + first + align - 1) / align * align - first);
}

static void ctx_inspect_go(Elf *elf, struct agent_tracectx_info *info)
{
	GElf_Shdr sh;
	Elf_Scn *scn = ctx_section(elf, ".go.buildinfo", &sh);
	uint64_t memsz = 0, align = 1, vaddr = 0;
	struct profile_ctx_proc *p = &info->proc;
	Elf_Data *d;
	int major, minor;

	if (!scn || sh.sh_type == SHT_NOBITS || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
		return;
	if (agent_tracectx_go_version(d->d_buf, d->d_size, info->go_version,
				      sizeof(info->go_version)) ||
	    !ctx_go_parse(info->go_version, &major, &minor)) {
		snprintf(info->why, sizeof(info->why), "Go binary without a readable version");
		return;
	}
	if (ctx_pt_tls(elf, &memsz, &align, &vaddr) && memsz != 8) {
		snprintf(info->why, sizeof(info->why),
			 "%s: externally linked (TLS of %" PRIu64 " bytes)", info->go_version,
			 memsz);
		return;
	}
	if (major != 1 || minor < 18) {
		snprintf(info->why, sizeof(info->why), "%s: not supported", info->go_version);
		return;
	}
	if (ctx_go_dwarf(elf, p) == 0) {
		p->flags |= PROFILE_CTX_GO | (minor <= 23 ? PROFILE_CTX_GO_MAP : 0);
		info->offsets_from = "dwarf";
	} else if (agent_tracectx_go_table(major, minor, p) == 0) {
		info->offsets_from = "table";
	} else {
		snprintf(info->why, sizeof(info->why), "%s: no DWARF and not in the offset table",
			 info->go_version);
		return;
	}
	p->go_tls_off = -8; /* runtime.tlsg: the one slot of the Go linker's TLS segment */
}

static void ctx_inspect_otel(Elf *elf, struct agent_tracectx_info *info)
{
	uint64_t value = 0, memsz = 0, align = 1, vaddr = 0;

	if (ctx_tls_symbol(elf, "otel_thread_ctx_v1", &value))
		return;
	if (!ctx_pt_tls(elf, &memsz, &align, &vaddr) || value + 8 > memsz ||
	    (align & (align - 1))) {
		snprintf(info->why, sizeof(info->why),
			 "otel_thread_ctx_v1 outside the TLS segment");
		return;
	}
	info->proc.otel_tls_off = ctx_exe_tls_base(memsz, align, vaddr) + (int64_t)value;
	info->proc.flags |= PROFILE_CTX_OTEL;
}

/* The index in dynamic symbol table @symscn of defined TLS symbol @want (and its value); 0 = none. */
static uint32_t ctx_dynsym_index(Elf *elf, Elf_Scn *symscn, const char *want, uint64_t *value)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (!symscn || !gelf_getshdr(symscn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
	    !(d = elf_getdata(symscn, NULL)))
		return 0;
	for (size_t i = 1; i < sh.sh_size / sh.sh_entsize && i <= UINT32_MAX; i++) {
		GElf_Sym sym;
		const char *name;

		if (gelf_getsym(d, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_TLS &&
		    sym.st_shndx != SHN_UNDEF &&
		    (name = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(name, want)) {
			*value = sym.st_value;
			return (uint32_t)i;
		}
	}
	return 0;
}

/* The GOT slots of a dynamic otel_thread_ctx_v1 and the first executable PT_LOAD, into @info. */
static void ctx_inspect_lib(Elf *elf, struct agent_tracectx_info *info)
{
	Elf_Scn *scn = NULL, *symscn = NULL;
	uint32_t sym = 0;
	GElf_Shdr sh;
	size_t n;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_link)
			continue;
		if (!symscn || elf_ndxscn(symscn) != sh.sh_link) {
			symscn = elf_getscn(elf, sh.sh_link);
			sym = ctx_dynsym_index(elf, symscn, "otel_thread_ctx_v1", &info->lib_value);
		}
		if (sym && (d = elf_getdata(scn, NULL)) && d->d_buf)
			agent_tracectx_tls_relocs(d->d_buf, d->d_size, sym, &info->lib);
	}
	if (info->lib.kind == AGENT_TRACECTX_TLS_NONE || elf_getphdrnum(elf, &n))
		goto none;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			info->x_offset = ph.p_offset;
			info->x_vaddr = ph.p_vaddr;
			return;
		}
	}
none:
	memset(&info->lib, 0, sizeof(info->lib));
}

int agent_tracectx_inspect(const char *path, struct agent_tracectx_info *info)
{
	GElf_Ehdr eh;
	Elf *elf;
	int fd, rc = 0;

	memset(info, 0, sizeof(*info));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64) {
		rc = -PROF_EFORMAT;
		goto out;
	}
	ctx_inspect_go(elf, info);
	ctx_inspect_otel(elf, info);
	if (eh.e_type == ET_DYN)
		ctx_inspect_lib(elf, info);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* ---- per process and per sample ---- */

#define CTX_SLOTS 1024 /* contexts waiting for their sample, by tid */
#define CTX_PROCS 4096 /* processes looked at (open addressing by pid) */
#define CTX_FILES 256  /* executables and libraries inspected, by identity (ctx_file_info) */

/*
 * What one executable file publishes: inspecting it costs ~30 ms for a Go
 * binary's DWARF, so processes of one binary (replicas, forks, re-runs)
 * share the answer, keyed by the file's identity.
 */
struct ctx_file {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int rc;
	struct agent_tracectx_info info;
};

struct ctx_proc {
	uint32_t pid; /* 0 = empty */
	bool registered;
	uint8_t lib_tries;   /* looks at the libraries left (CTX_LIB_TRIES) */
	int64_t lib_next_ns; /* CLOCK_MONOTONIC of the next look */
};

/*
 * A process with no context at its first sample has its libraries looked
 * at again, every CTX_LIB_EVERY_NS for CTX_LIB_TRIES more times: its
 * first sample may come while the loader is still mapping and relocating
 * them, or before a tracer dlopen'd its library.
 */
#define CTX_LIB_TRIES	 4
#define CTX_LIB_EVERY_NS 1000000000LL

struct agent_tracectx {
	struct agent_tracectx_opts o;
	struct profile_ctx_event *slots; /* CTX_SLOTS, kind 0 = empty */
	struct ctx_proc *procs;		 /* CTX_PROCS */
	size_t nprocs;
	struct ctx_file *files; /* CTX_FILES, dev and ino 0 = empty; replaced round robin */
	size_t next_file;
	struct agent_tracectx_sample cur;
	struct agent_tracectx_stats st;
};

int agent_tracectx_new(const struct agent_tracectx_opts *o, struct agent_tracectx **out)
{
	struct agent_tracectx *tc;

	*out = NULL;
	if (!o || !o->install)
		return -EINVAL;
	tc = xcalloc(1, sizeof(*tc));
	tc->o = *o;
	tc->slots = xcalloc(CTX_SLOTS, sizeof(*tc->slots));
	tc->procs = xcalloc(CTX_PROCS, sizeof(*tc->procs));
	tc->files = xcalloc(CTX_FILES, sizeof(*tc->files));
	*out = tc;
	return 0;
}

void agent_tracectx_free(struct agent_tracectx *tc)
{
	if (!tc)
		return;
	free(tc->slots);
	free(tc->procs);
	free(tc->files);
	free(tc);
}

/* The entry of @pid (found, or the empty one to take), or NULL when full. */
static struct ctx_proc *ctx_proc_slot(struct agent_tracectx *tc, uint32_t pid)
{
	for (size_t k = 0; k < CTX_PROCS; k++) {
		struct ctx_proc *e = &tc->procs[(pid * 2654435761u + k) % CTX_PROCS];

		if (e->pid == pid || !e->pid)
			return e;
	}
	return NULL;
}

/* agent_tracectx_inspect of @path, from the cache when the same file was inspected before. */
static int ctx_file_info(struct agent_tracectx *tc, const char *path,
			 struct agent_tracectx_info *info)
{
	struct ctx_file *f;
	struct stat sb;

	if (stat(path, &sb))
		return -errno;
	for (size_t i = 0; i < CTX_FILES; i++) {
		f = &tc->files[i];
		if ((f->dev || f->ino) && f->dev == sb.st_dev && f->ino == sb.st_ino &&
		    f->size == sb.st_size && f->mtime.tv_sec == sb.st_mtim.tv_sec &&
		    f->mtime.tv_nsec == sb.st_mtim.tv_nsec) {
			*info = f->info;
			return f->rc;
		}
	}
	f = &tc->files[tc->next_file++ % CTX_FILES];
	f->rc = agent_tracectx_inspect(path, &f->info);
	f->dev = sb.st_dev;
	f->ino = sb.st_ino;
	f->size = sb.st_size;
	f->mtime = sb.st_mtim;
	*info = f->info;
	return f->rc;
}

#define CTX_MAPS_MAX (4u << 20) /* bytes of /proc/PID/maps read */

/* The whole of file @path (at most CTX_MAPS_MAX bytes) into *@out (caller frees); its length or -errno. */
static ssize_t ctx_read_file(const char *path, char **out)
{
	size_t cap = 1 << 16, len = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -errno;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			if (cap >= CTX_MAPS_MAX)
				break;
			buf = xrealloc(buf, cap *= 2);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			free(buf);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	*out = buf;
	return (ssize_t)len;
}

/*
 * The OTel thread context of process @pid in one of the shared libraries
 * it has mapped (other than its executable @exe), into @info->proc; @why
 * tells of a library that defines the symbol but could not be read.
 * true when found.
 */
static bool ctx_find_lib(struct agent_tracectx *tc, uint32_t pid, const char *proc_root,
			 const char *exe, struct agent_tracectx_info *info)
{
	struct agent_memreader mem = { agent_procmem_read, (void *)(uintptr_t)pid };
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	char path[PROFILE_PATH_LEN + 64], *text;
	struct agent_procmaps pm;
	bool found = false;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	if ((n = ctx_read_file(path, &text)) < 0)
		return false;
	agent_procmaps_init(&pm);
	agent_procmaps_parse(&pm, text, (size_t)n);
	free(text);
	for (size_t i = 0; i < pm.maps.n && !found; i++) {
		const struct agent_map *m = &pm.maps.v[i];
		struct agent_tracectx_info li;
		uint64_t bias;
		int rc;

		if (m->kind != AGENT_MAP_FILE || !m->path[0] || !strcmp(m->path, exe) ||
		    (i > 0 && !strcmp(m->path, pm.maps.v[i - 1].path)))
			continue;
		snprintf(path, sizeof(path), "%s/%u/root%s", proc_root, pid, m->path);
		if (ctx_file_info(tc, path, &li) || li.lib.kind == AGENT_TRACECTX_TLS_NONE ||
		    m->offset != (li.x_offset & ~(page - 1)))
			continue;
		bias = m->start - (li.x_vaddr & ~(page - 1));
		rc = agent_tracectx_tls_locate(&li.lib, bias, li.lib_value, &mem, &info->proc);
		if (rc) {
			snprintf(info->why, sizeof(info->why), "otel_thread_ctx_v1 in %s: %s",
				 m->path, rc == -ENOENT ? "no usable TLS location" : strerror(-rc));
			continue;
		}
		info->why[0] = '\0';
		info->lib = li.lib;
		snprintf(info->lib_path, sizeof(info->lib_path), "%s", m->path);
		found = true;
	}
	agent_procmaps_release(&pm);
	return found;
}

static const char *const ctx_tls_kind_names[] = { "-", "tlsdesc", "initial-exec",
						  "general-dynamic" };

void agent_tracectx_check(struct agent_tracectx *tc, struct agent_proc *ap, const char *proc_root)
{
	struct ctx_proc *e = ctx_proc_slot(tc, ap->pid);
	struct agent_tracectx_info info;
	char path[PROFILE_PATH_LEN + 64];
	struct timespec ts;
	int64_t now;
	int rc;

	if (!e || !ap->exe_path || !ap->exe_path[0])
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (e->pid == ap->pid) {
		if (e->registered || !e->lib_tries || now < e->lib_next_ns)
			return;
		e->lib_tries--;
	} else {
		if (tc->nprocs >= CTX_PROCS * 3 / 4)
			return; /* keep probing short: later processes go without */
		e->pid = ap->pid;
		e->lib_tries = CTX_LIB_TRIES;
		tc->nprocs++;
	}
	e->lib_next_ns = now + CTX_LIB_EVERY_NS;
	snprintf(path, sizeof(path), "%s/%u/root%s", proc_root, ap->pid, ap->exe_path);
	if ((rc = ctx_file_info(tc, path, &info)) || info.why[0] || info.proc.flags)
		e->lib_tries = 0; /* the executable decides */
	if (rc)
		return;
	memset(&info.lib, 0, sizeof(info.lib));
	info.lib_path[0] = '\0';
	if (!(info.proc.flags & PROFILE_CTX_OTEL) &&
	    ctx_find_lib(tc, ap->pid, proc_root, ap->exe_path, &info))
		e->lib_tries = 0;
	if (info.why[0] && e->lib_tries)
		return; /* a library not relocated yet, perhaps: told of at the last look */
	if (info.why[0]) {
		tc->st.procs_refused++;
		log_info("agent trace context pid=%u exe=%s: %s", ap->pid, ap->exe_name, info.why);
	}
	if (!info.proc.flags)
		return;
	if ((rc = tc->o.install(tc->o.ctx, ap->pid, &info.proc))) {
		log_warn("agent trace context pid=%u: not registered: %s", ap->pid, strerror(-rc));
		return;
	}
	e->registered = true;
	if (info.proc.flags & PROFILE_CTX_GO)
		tc->st.procs_go++;
	if (info.proc.flags & PROFILE_CTX_OTEL)
		tc->st.procs_otel++;
	log_info("agent trace context pid=%u exe=%s go=%s offsets=%s otel=%s%s%s tls=%s%s", ap->pid,
		 ap->exe_name, info.go_version[0] ? info.go_version : "-",
		 info.offsets_from ? info.offsets_from : "-",
		 (info.proc.flags & PROFILE_CTX_OTEL) ? "yes" : "no",
		 info.lib_path[0] ? " lib=" : "", info.lib_path, ctx_tls_kind_names[info.lib.kind],
		 !(info.proc.flags & PROFILE_CTX_OTEL)	    ? ""
		 : (info.proc.flags & PROFILE_CTX_OTEL_DTV) ? " (dtv)"
							    : " (tp)");
}

void agent_tracectx_forget(struct agent_tracectx *tc, uint32_t pid)
{
	struct ctx_proc *e = ctx_proc_slot(tc, pid);
	size_t i, j;

	if (!e || e->pid != pid)
		return;
	if (e->registered && tc->o.remove)
		tc->o.remove(tc->o.ctx, pid);
	/* Delete from the open-addressed table: move later entries of the run back. */
	i = (size_t)(e - tc->procs);
	memset(e, 0, sizeof(*e));
	tc->nprocs--;
	for (j = (i + 1) % CTX_PROCS; tc->procs[j].pid; j = (j + 1) % CTX_PROCS) {
		struct ctx_proc moved = tc->procs[j];

		memset(&tc->procs[j], 0, sizeof(moved));
		*ctx_proc_slot(tc, moved.pid) = moved;
	}
}

void agent_tracectx_add_event(struct agent_tracectx *tc, const struct profile_ctx_event *ce)
{
	struct profile_ctx_event *s = &tc->slots[ce->tid % CTX_SLOTS];

	if (s->kind)
		tc->st.missed++;
	*s = *ce;
	tc->st.events++;
}

const struct agent_tracectx_sample *agent_tracectx_take(struct agent_tracectx *tc, uint32_t tid,
							uint64_t time_ns)
{
	struct profile_ctx_event *s = &tc->slots[tid % CTX_SLOTS];
	bool found;

	if (!s->kind || s->tid != tid || s->time_ns != time_ns)
		return NULL;
	found = agent_tracectx_decode(s, tc->o.allow, tc->o.nallow, &tc->cur);
	s->kind = 0;
	if (!found)
		return NULL;
	tc->st.samples++;
	if (tc->cur.has_link)
		tc->st.linked++;
	return &tc->cur;
}

void agent_tracectx_get_stats(const struct agent_tracectx *tc, struct agent_tracectx_stats *st)
{
	*st = tc->st;
}
