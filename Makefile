# SPDX-License-Identifier: Apache-2.0
# profd build. `make` builds build/profd; `make test` installs dependencies,
# builds with ASan+UBSan (build-san/) and runs every test; `make run` starts
# the server and the agent; `make fuzz` builds libFuzzer targets and `make
# fuzz-long` runs them (FUZZ_SECONDS in all, recorded); `make bench`
# runs the benchmarks. V=1 shows full commands.

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
PROTOC_C  ?= protoc-c
SANITIZE  ?=
O         ?= build

ifeq ($(V),1)
Q =
else
Q = @
endif

WARN := -Wall -Wextra -Werror -Wformat-security -Wpointer-arith -Wstrict-prototypes \
	-Wmissing-prototypes -Wvla -Wwrite-strings -Wold-style-definition -fno-common
CFLAGS_BASE := -std=gnu11 -g -O2 -pthread $(WARN) -Isrc -I$(O)/gen -I$(O)/bpf -MMD -MP
ifneq ($(SANITIZE),)
CFLAGS_BASE += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer -O1
LDFLAGS_SAN := -fsanitize=$(SANITIZE)
endif
CFLAGS_ALL := $(CFLAGS_BASE) $(CFLAGS)
LIBS := -lbpf -lelf -ldw -lprotobuf-c -lz -lisal -lzstd -lnghttp2 -ljansson \
	-lyaml -lpcre2-8 -lxxhash -liberty -lpthread -lm -ldl

# Protobuf: our own .proto files (docs/formats.md "OTLP profiles messages", "pprof profile.proto") compiled by protobuf-c.
PROTOS   := $(sort $(shell find src/format/proto -name '*.proto' 2>/dev/null))
PROTO_C  := $(patsubst src/format/proto/%.proto,$(O)/gen/%.pb-c.c,$(PROTOS))
PROTO_O  := $(PROTO_C:.c=.o)

# BPF programs: src/agent/bpf/<prog>.bpf.c -> $(O)/bpf/<prog>.skel.h
BPF_SRC  := $(wildcard src/agent/bpf/*.bpf.c)
BPF_SKEL := $(patsubst src/agent/bpf/%.bpf.c,$(O)/bpf/%.skel.h,$(BPF_SRC))
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

LIB_SRC  := $(sort $(filter-out src/cli/main.c,$(wildcard src/*/*.c)))
LIB_OBJ  := $(patsubst src/%.c,$(O)/obj/%.o,$(LIB_SRC))
MAIN_OBJ := $(O)/obj/cli/main.o
# `profd --version`: the release and the commit it was built from.
VERSION  := 0.2
GIT_REV  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
$(MAIN_OBJ): CFLAGS_ALL += -DPROFD_VERSION='"$(VERSION) ($(GIT_REV))"'
LIBPROFD := $(O)/libprofd.a

UNIT_SRC := $(sort $(wildcard tests/unit/*/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRC))
# Helpers the integration tests run (tests/tools/*.c -> $(O)/tests/tools/*).
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN := $(patsubst tests/tools/%.c,$(O)/tests/tools/%,$(TOOL_SRC))

.PHONY: all build run test unit check-format check-layers check-refs check-js check-commits hooks fuzz fuzz-long bench clean deps ui image

all build: $(O)/profd $(TOOL_BIN) ui

# The explorer's third-party files (uPlot from npm) into ui/vendor/.
ui:
	$(Q)bash scripts/build-ui.sh

deps:
	$(Q)bash scripts/install-deps.sh

$(O)/gen/%.pb-c.c $(O)/gen/%.pb-c.h: src/format/proto/%.proto
	@mkdir -p $(dir $@)
	$(Q)$(PROTOC_C) --proto_path=src/format/proto --c_out=$(O)/gen $<

# Order-only on every generated file: a .pb-c.c includes the headers of the
# .proto files it imports (profiles.proto imports common.proto, ...).
$(O)/gen/%.pb-c.o: $(O)/gen/%.pb-c.c | $(PROTO_C)
	$(Q)$(CC) -std=gnu11 -g -O2 -fPIC -I$(O)/gen $(if $(SANITIZE),-fsanitize=$(SANITIZE)) -c $< -o $@

$(O)/bpf/vmlinux.h:
	@mkdir -p $(dir $@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(O)/bpf/%.bpf.o: src/agent/bpf/%.bpf.c $(O)/bpf/vmlinux.h $(wildcard src/agent/bpf/*.h)
	$(Q)$(CLANG) -g -O2 -Wall -Werror=undef -target bpf -D__TARGET_ARCH_$(ARCH) \
		-I$(O)/bpf -Isrc/agent/bpf -c $< -o $@

$(O)/bpf/%.skel.h: $(O)/bpf/%.bpf.o
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(O)/obj/%.o: src/%.c | $(PROTO_C) $(BPF_SKEL)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

$(LIBPROFD): $(LIB_OBJ) $(PROTO_O)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/profd: $(MAIN_OBJ) $(LIBPROFD)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_SAN) -pthread -o $@ $(MAIN_OBJ) $(LIBPROFD) $(LIBS)

$(O)/tests/%: tests/unit/%.c $(LIBPROFD)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -Itests -o $@ $< $(LIBPROFD) $(LIBS) -lcmocka $(LDFLAGS_SAN)

$(O)/tests/tools/%: tests/tools/%.c $(LIBPROFD)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) -Itests -o $@ $< $(LIBPROFD) $(LIBS) $(LDFLAGS_SAN)

unit: $(UNIT_BIN)
	$(Q)set -e; for t in $(UNIT_BIN); do echo "  UNIT    $$t"; $$t; done

# Everything a contributor or CI needs: dependencies, a sanitized build, all tests.
test: deps
	$(Q)$(MAKE) --no-print-directory check-format check-layers check-refs check-js check-commits
	$(Q)$(MAKE) --no-print-directory O=build-san SANITIZE=address,undefined build unit
	$(Q)$(MAKE) --no-print-directory build
	$(Q)PROFD=build-san/profd PROFD_FAST=build/profd bash tests/run.sh

check-format:
	$(Q)clang-format --dry-run --Werror $$(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c')

check-layers:
	$(Q)bash scripts/check-layers.sh

# Every reference to docs/ in code, tests and docs resolves in a clone.
check-refs:
	$(Q)python3 scripts/check-doc-refs.py

# The commit message convention (CONTRIBUTING.md) over the commits after
# the one in scripts/commit-msg-base; says "skip:" in a shallow clone.
check-commits:
	$(Q)bash scripts/check-commit-msg.sh --new

# Opt in: a commit-msg hook that runs scripts/check-commit-msg.sh on each
# message (in every worktree of this clone).
hooks:
	$(Q)h=$$(git rev-parse --git-path hooks) && mkdir -p "$$h" && \
		printf '%s\n' '#!/bin/sh' 'exec "$$(git rev-parse --show-toplevel)/scripts/check-commit-msg.sh" "$$1"' \
		>"$$h/commit-msg" && chmod +x "$$h/commit-msg" && echo "  HOOK    $$h/commit-msg"

# The explorer's modules (ui/js): a small lint, then the helpers' unit tests.
check-js:
	$(Q)node tests/js/lint_ui.mjs
	$(Q)node --test tests/js/unit/

run: deps
	$(Q)$(MAKE) --no-print-directory build
	$(Q)bash scripts/run.sh

fuzz: deps
	$(Q)bash scripts/fuzz.sh build

# Every fuzz target for FUZZ_SECONDS CPU seconds in all, FUZZ_JOBS (nproc)
# at a time; the kept corpus (tests/fuzz/corpus) is minimized and the run
# recorded in bench/results/fuzz-ledger.tsv and bench/results/fuzz.md.
FUZZ_SECONDS ?= 3600
fuzz-long: deps
	$(Q)bash scripts/fuzz.sh long $(FUZZ_SECONDS)

# The container image (server and agent), from this machine's Debian
# packages with podman; docs/deploy.md.
image: deps
	$(Q)$(MAKE) --no-print-directory build
	$(Q)bash scripts/image.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory build
	$(Q)bash bench/run.sh

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(O)/obj $(O)/tests -name '*.d' 2>/dev/null)
