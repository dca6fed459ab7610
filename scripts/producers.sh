#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# producers.sh - installs the real profile producers the producer tests
# (tests/integration/test_producer_*.sh) run against profd, from the
# package registries by their ordinary clients, into a cache outside the
# repository, and prints where they are. Idempotent: a second call finds
# the cache and prints at once.
#
# Usage: scripts/producers.sh WHAT [ARGS]
#   pyroscope-python        a venv with pyroscope-io (PyPI) ->
#                           prints the venv's python
#   pyroscope-go GO         the workload tests/workloads/pyroscope_go built
#                           by the Go toolchain GO with the newest
#                           github.com/grafana/pyroscope-go release that
#                           toolchain can build -> prints "BINARY VERSION"
#   async-profiler          tools.profiler:async-profiler and
#                           tools.profiler:jfr-converter (Maven) -> prints
#                           "LIBASYNCPROFILER.so CONVERTER.jar VERSION CONVERTER_VERSION"
#   ebpf-profiler           the OpenTelemetry eBPF profiler
#                           (go.opentelemetry.io/ebpf-profiler, Go module
#                           proxy) built with the Go on PATH -> prints
#                           "BINARY VERSION HOW": HOW is "unchanged", or
#                           "memlock-tolerant" where this process lacks
#                           CAP_SYS_RESOURCE (then its rlimit package,
#                           which raises RLIMIT_MEMLOCK and fails with
#                           EPERM, is replaced in the build copy by one
#                           that goes on: Linux >= 5.11 charges BPF memory
#                           to the memory cgroup, not RLIMIT_MEMLOCK)
#   otelcol                 an OpenTelemetry Collector made by the Collector
#                           builder (go.opentelemetry.io/collector/cmd/builder)
#                           with the OTLP receiver and the OTLP and
#                           OTLP/HTTP exporters -> prints "BINARY VERSION"
#                           (the contrib pprof receiver is not served by
#                           the Go module proxy here: no build has it)
#
# Maven puts artifacts in $MAVEN_LOCAL_REPO (default ~/.m2/repository).
# Cache: $PROFD_PRODUCERS_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/profd/producers.
# Exit status: 0 and the line above; 3 with the reason on stderr when a
# registry cannot serve the producer or the build fails (the tests then
# skip with that reason); 2 on bad usage.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${PROFD_PRODUCERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/profd/producers}
mkdir -p "$cache"

# Versions tried, newest first; the first one the registry serves and
# (for Go) the toolchain accepts is used. Pinned so that a test's figures
# stay comparable across runs.
PYROSCOPE_IO_VERSION=1.4.0
PYROSCOPE_GO_VERSIONS=(v1.5.0 v1.2.7)
# Its releases are tagged by month; the proxy serves a tag it is asked for.
EBPF_PROFILER_VERSION=v0.0.202601
# One release for every Collector module (core v0.165.0 goes with v1.71.0).
OTELCOL_VERSION=v0.165.0
ASYNC_PROFILER_VERSION=4.4
# The newest jfr-converter Maven Central has (4.3 and 4.4 were not published).
JFR_CONVERTER_VERSION=4.2

cannot() { # cannot REASON...: the producer is not to be had
	echo "producers: $*" >&2
	exit 3
}

# Serialise installs of one producer (two tests may ask at once).
lock() {
	exec 9>"$cache/.lock-$1"
	flock 9
}

pyroscope_python() {
	local venv=$cache/pyroscope-python-$PYROSCOPE_IO_VERSION
	lock pyroscope-python
	if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyroscope' 2>/dev/null; then
		rm -rf "$venv"
		python3 -m venv "$venv" >&2 || cannot "python3 -m venv failed"
		timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check \
			"pyroscope-io==$PYROSCOPE_IO_VERSION" >&2 ||
			{ rm -rf "$venv"; cannot "pip could not install pyroscope-io==$PYROSCOPE_IO_VERSION"; }
	fi
	echo "$venv/bin/python"
}

pyroscope_go() {
	local go=${1:?usage: producers.sh pyroscope-go GO}
	local gover v dir out
	gover=$("$go" env GOVERSION 2>/dev/null) || cannot "$go is not a Go toolchain"
	lock "pyroscope-go-$gover"
	for v in "${PYROSCOPE_GO_VERSIONS[@]}"; do
		dir=$cache/pyroscope-go-$v-$gover
		out=$dir/go_pyroscope
		if [ ! -x "$out" ] || [ "$here/tests/workloads/pyroscope_go/main.go" -nt "$out" ]; then
			rm -rf "$dir"
			mkdir -p "$dir"
			cp "$here/tests/workloads/pyroscope_go/main.go" "$dir/"
			printf 'module profd.test/go_pyroscope\n\ngo 1.19\n' >"$dir/go.mod"
			# GOTOOLCHAIN=local: build with this toolchain or fail, never
			# download another one.
			if ! (cd "$dir" && export GOTOOLCHAIN=local GOFLAGS=-mod=mod &&
				timeout 600 "$go" get "github.com/grafana/pyroscope-go@$v" &&
				timeout 600 "$go" build -o go_pyroscope .) >"$dir/build.log" 2>&1; then
				echo "producers: pyroscope-go $v does not build with $gover: $(tail -n 2 "$dir/build.log" | tr '\n' ' ')" >&2
				rm -f "$out"
				continue
			fi
		fi
		echo "$out $v"
		return 0
	done
	cannot "no pyroscope-go release in ${PYROSCOPE_GO_VERSIONS[*]} builds with $gover"
}

async_profiler() {
	local v=$ASYNC_PROFILER_VERSION cv=$JFR_CONVERTER_VERSION
	local dir=$cache/async-profiler-$v repo
	lock async-profiler
	if [ ! -f "$dir/libasyncProfiler.so" ] || [ ! -f "$dir/jfr-converter-$cv.jar" ]; then
		command -v mvn >/dev/null || cannot "mvn is not installed"
		repo=${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}
		timeout 600 mvn -B -q dependency:get "-Dartifact=tools.profiler:async-profiler:$v" >&2 ||
			cannot "Maven could not serve tools.profiler:async-profiler:$v"
		timeout 600 mvn -B -q dependency:get "-Dartifact=tools.profiler:jfr-converter:$cv" >&2 ||
			cannot "Maven could not serve tools.profiler:jfr-converter:$cv"
		mkdir -p "$dir"
		unzip -p "$repo/tools/profiler/async-profiler/$v/async-profiler-$v.jar" \
			linux-x64/libasyncProfiler.so >"$dir/libasyncProfiler.so.tmp" &&
			mv "$dir/libasyncProfiler.so.tmp" "$dir/libasyncProfiler.so" ||
			cannot "async-profiler-$v.jar has no linux-x64/libasyncProfiler.so"
		cp "$repo/tools/profiler/jfr-converter/$cv/jfr-converter-$cv.jar" "$dir/" ||
			cannot "jfr-converter-$cv.jar not found in the local Maven repository"
	fi
	echo "$dir/libasyncProfiler.so $dir/jfr-converter-$cv.jar $v $cv"
}

# The replacement rlimit package for a process without CAP_SYS_RESOURCE.
memlock_tolerant_rlimit() {
	cat <<'GO'
// Written by profd's scripts/producers.sh into its build copy of the
// OpenTelemetry eBPF profiler: MaximizeMemlock as upstream's, except
// that EPERM (no CAP_SYS_RESOURCE) is not an error, since Linux 5.11
// charges BPF memory to the memory cgroup instead of RLIMIT_MEMLOCK.
package rlimit

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

func MaximizeMemlock() (func(), error) {
	var old unix.Rlimit
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, &old); err != nil {
		if errors.Is(err, unix.EPERM) {
			return func() {}, nil
		}
		return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)
	}
	return func() { _ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old) }, nil
}
GO
}

ebpf_profiler() {
	local v=$EBPF_PROFILER_VERSION how=unchanged caps dir mod
	command -v go >/dev/null || cannot "go is not installed"
	caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
	# CAP_SYS_RESOURCE is bit 24
	(((16#${caps:-0} >> 24) & 1)) || how=memlock-tolerant
	dir=$cache/ebpf-profiler-$v-$how
	lock ebpf-profiler
	if [ ! -x "$dir/ebpf-profiler" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		mod=$(cd "$dir" && GOTOOLCHAIN=local GOFLAGS=-mod=mod timeout 900 go mod download -json \
			"go.opentelemetry.io/ebpf-profiler@$v" 2>"$dir/build.log" |
			python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir", ""))' 2>/dev/null)
		[ -n "$mod" ] && [ -d "$mod" ] ||
			cannot "the Go module proxy could not serve go.opentelemetry.io/ebpf-profiler@$v: $(tail -n 1 "$dir/build.log")"
		# A build copy (the module cache is read-only and may not be overlaid).
		cp -r "$mod" "$dir/src" && chmod -R u+w "$dir/src" || cannot "cannot copy $mod"
		[ "$how" = unchanged ] || memlock_tolerant_rlimit >"$dir/src/rlimit/rlimit.go"
		(cd "$dir/src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod timeout 1800 nice go build -p 1 \
			-o "$dir/ebpf-profiler.tmp" .) >>"$dir/build.log" 2>&1 ||
			cannot "go.opentelemetry.io/ebpf-profiler@$v does not build: $(tail -n 2 "$dir/build.log" | tr '\n' ' ')"
		mv "$dir/ebpf-profiler.tmp" "$dir/ebpf-profiler"
		rm -rf "$dir/src"
	fi
	echo "$dir/ebpf-profiler $v $how"
}

otelcol() {
	local v=$OTELCOL_VERSION dir=$cache/otelcol-$OTELCOL_VERSION
	command -v go >/dev/null || cannot "go is not installed"
	lock otelcol
	if [ ! -x "$dir/out/otelcol-profd" ]; then
		rm -rf "$dir"
		mkdir -p "$dir"
		cat >"$dir/builder.yaml" <<EOF
dist:
  name: otelcol-profd
  description: OpenTelemetry Collector for profd's producer tests
  output_path: ./out
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver $v
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlpexporter $v
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter $v
EOF
		(cd "$dir" && GOTOOLCHAIN=local GOFLAGS=-p=1 timeout 2400 nice go run \
			"go.opentelemetry.io/collector/cmd/builder@$v" --config builder.yaml) \
			>"$dir/build.log" 2>&1 ||
			cannot "the Collector builder $v failed: $(grep -m1 -i 'error' "$dir/build.log" | cut -c1-300)"
	fi
	echo "$dir/out/otelcol-profd $v"
}

case ${1:-} in
pyroscope-python) pyroscope_python ;;
pyroscope-go) pyroscope_go "${2:-}" ;;
async-profiler) async_profiler ;;
ebpf-profiler) ebpf_profiler ;;
otelcol) otelcol ;;
*)
	echo "usage: producers.sh pyroscope-python | pyroscope-go GO | async-profiler | ebpf-profiler | otelcol" >&2
	exit 2
	;;
esac
