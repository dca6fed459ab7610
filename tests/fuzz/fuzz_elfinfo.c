// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_elfinfo.c - libFuzzer target for the agent's light ELF reader
 * (src/agent/elfinfo.c: ELF header, program headers, PT_NOTE build ID,
 * PT_LOAD table), which reads whatever file any process on the host has
 * mapped: any byte string, as a file, must give 0 with an even-length
 * lowercase hex build ID, or a negative code; repeated lookups at other
 * offsets must agree with the first read (the cached segment table).
 * Build: scripts/fuzz.sh (clang -fsanitize=fuzzer,address,undefined,
 * the profd library, -lelf). Seeds: any ELF files.
 */
#include "base/compat.h"
#include "agent/elfinfo.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_elfinfo_cache *c;
	char path[64], bid[AGENT_BUILD_ID_MAX], bid2[AGENT_BUILD_ID_MAX];
	struct stat st;
	int64_t bias;
	int fd, rc;

	fd = memfd_create("fuzz_elfinfo", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if ((size && write(fd, data, size) != (ssize_t)size) || fstat(fd, &st) != 0) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	c = agent_elfinfo_cache_new(4);
	rc = agent_elfinfo_lookup(c, path, &st, 0, 4096, bid, sizeof(bid), &bias);
	if (rc == 0) {
		size_t n = strlen(bid);

		PROF_ASSERT(n % 2 == 0);
		for (size_t i = 0; i < n; i++)
			PROF_ASSERT((bid[i] >= '0' && bid[i] <= '9') ||
				    (bid[i] >= 'a' && bid[i] <= 'f'));
	} else {
		PROF_ASSERT(rc < 0);
	}
	/* Offsets taken from the input: answered from the cached table. */
	for (size_t i = 0; i + 8 <= size && i < 16 * 8; i += 8) {
		uint64_t off;

		memcpy(&off, data + i, sizeof(off));
		if (agent_elfinfo_lookup(c, path, &st, off, 8192, bid2, sizeof(bid2), &bias) == 0)
			PROF_ASSERT(rc != 0 || !strcmp(bid, bid2));
	}
	agent_elfinfo_cache_free(c);
	close(fd);
	return 0;
}
