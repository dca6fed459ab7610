#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz.sh - build and run the libFuzzer targets (one per decoder,
# tests/fuzz/fuzz_*.c) with clang -fsanitize=fuzzer,address,undefined.
#
#   scripts/fuzz.sh build          build every target into build-fuzz/
#   scripts/fuzz.sh run SECONDS    build, then run each target for SECONDS
#                                  (one after the other) and write a summary
#                                  table to build-fuzz/report.md
#   scripts/fuzz.sh run SECONDS fuzz_pprof ...   only the named targets
#
# Targets link against the decoding layers (src/base, model, format,
# store (block decoders: fuzz_block), symbolize, query/top.c, the scrape
# config parser, the agent's kubelet pod-list parser and ELF reader) compiled here with
# the same sanitizers;
# protobuf code is generated from src/format/proto into build-fuzz/gen.
# Seeds (build-fuzz/seeds/<target>/): the matching folder of the shared
# corpus when $PROFD_CORPUS (or ../shared/corpus) exists, gzipped files
# inflated: fuzz_pprof <- pprof/, fuzz_pprof_legacy <- pprof-legacy/,
# fuzz_jfr <- jfr/, fuzz_folded <- collapsed/, fuzz_perfscript <-
# perf-script/, fuzz_speedscope <- speedscope/, fuzz_cpuprofile <-
# cpuprofile/, fuzz_otlp_json <- otlp/, fuzz_detect <- every folder but
# jfr/ (JFR files are large; one small recording instead); fuzz_otlp and
# fuzz_otlp_direct get pprof/ and otlp/ converted to OTLP protobuf, and
# fuzz_otlp_json pprof/
# converted to OTLP/JSON, by $PROFD_FAST (default build/profd) when it is
# built. Targets without a corpus folder (fuzz_elf, ...) start from their
# regression inputs. FUZZ_OUT=dir builds and runs somewhere else than
# build-fuzz/ (e.g. while another run uses it).
# Crashes are kept in build-fuzz/crashes/<target>/ and replayed first on
# the next run (libFuzzer reads every corpus directory given); once fixed,
# copy them to tests/fuzz/regress/<target>/, which every run replays too and
# tests/integration/test_fuzz_regress.sh feeds to the sanitized profd.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${FUZZ_OUT:-build-fuzz}
CLANG=${CLANG:-clang}
FLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS="-std=gnu11 -Wall -Wextra -Isrc -I$OUT/gen -D_GNU_SOURCE"
LIBS="-lprotobuf-c -ljansson -lz -lisal -lzstd -lxxhash -lelf -ldw -liberty -lpcre2-8 -lyaml -lpthread -lm"
CORPUS=${PROFD_CORPUS:-../shared/corpus}
SEED_PROFD=${PROFD_FAST:-build/profd} # converts pprof seeds to OTLP

build() {
	mkdir -p "$OUT/gen" "$OUT/obj"
	local objs=() src obj
	while IFS= read -r proto; do
		protoc-c --proto_path=src/format/proto --c_out="$OUT/gen" "$proto"
	done < <(find src/format/proto -name '*.proto' | sort)
	while IFS= read -r src; do
		obj="$OUT/obj/$(echo "$src" | tr / _).o"
		if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "${FORCE:-0}" = 1 ]; then
			case "$src" in
			"$OUT"/gen/*) $CLANG -std=gnu11 $FLAGS -fsanitize=fuzzer-no-link -I"$OUT/gen" -c "$src" -o "$obj" ;;
			*) $CLANG $CFLAGS $FLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj" ;;
			esac
		fi
		objs+=("$obj")
	done < <(
		find "$OUT/gen" -name '*.pb-c.c'
		ls src/base/*.c src/model/*.c src/format/*.c src/store/*.c src/symbolize/*.c src/query/top.c \
			src/scrape/config.c src/scrape/relabel.c src/query/units.c src/mcp/mcp.c \
			src/mcp/tools.c src/mcp/text.c src/mcp/resources.c src/agent/k8s.c src/agent/elfinfo.c \
			src/agent/interp.c src/agent/interp_python.c src/agent/interp_ruby.c \
			src/agent/interp_php.c src/agent/interp_php_decode.c src/agent/jit_v8.c src/agent/jit_v8_decode.c \
			src/agent/jit_hotspot.c src/agent/jit_hotspot_decode.c 2>/dev/null
	)
	rm -f "$OUT/libfuzzprofd.a"
	ar rcs "$OUT/libfuzzprofd.a" "${objs[@]}"
	for t in tests/fuzz/fuzz_*.c; do
		local name
		name=$(basename "$t" .c)
		$CLANG $CFLAGS $FLAGS -fsanitize=fuzzer "$t" "$OUT/libfuzzprofd.a" $LIBS -o "$OUT/$name"
		echo "  FUZZ    $OUT/$name"
	done
}

# Copies @src into @dir, inflating gzip files (libFuzzer mutates the inner format).
seed_file() {
	local src=$1 dir=$2 base
	base=$(basename "$src")
	if gzip -t "$src" 2>/dev/null; then gzip -dc "$src" >"$dir/${base%.gz}"; else cp "$src" "$dir/$base"; fi
}

seeds() {
	local name=$1 dir="$OUT/seeds/$1" f d folders=()
	mkdir -p "$dir"
	if [ "$name" = fuzz_mcp ]; then # JSON-RPC messages for the MCP server (stub backend)
		printf '%s' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}' >"$dir/init.json"
		printf '%s' '[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]' >"$dir/batch.json"
		local t a
		for t in top_functions flamegraph_summary compare explain_change callers_callees function_timeseries source_location; do
			a='"from":1700000000000,"to":1700000019999,"max_tokens":300'
			case "$t" in
			compare | explain_change) a="$a"',"b_from":1700000600000,"b_to":1700000619999' ;;
			callers_callees | function_timeseries | source_location) a="$a"',"function":"hot_loop"' ;;
			esac
			printf '{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"%s","arguments":{%s}}}' "$t" "$t" "$a" >"$dir/$t.json"
		done
	fi
	if [ "$name" = fuzz_k8s_pods ]; then # a kubelet /pods answer, as in tests/unit/agent/test_k8s.c
		printf '%s' '{"kind":"PodList","items":[{"metadata":{"name":"web-5d8f7-abcde","namespace":"shop","uid":"0b4d9a3e-5c1f-4f7e-9d2a-1c3e5f7a9b0d","labels":{"app":"web"},"annotations":{"team":"a"},"ownerReferences":[{"kind":"ReplicaSet","name":"web-5d8f7"}]},"spec":{"nodeName":"n1"},"status":{"containerStatuses":[{"name":"app","containerID":"containerd://abc"}]}}]}' >"$dir/pods.json"
	fi
	if [ "$name" = fuzz_php ]; then # a user zend_function at 0, its name at 192, its file at 256
		python3 -c '
import struct, sys
b = bytearray(384)
b[0] = 2
struct.pack_into("<Q", b, 8, 0x10000 + 192)
struct.pack_into("<Q", b, 152, 0x10000 + 256)
struct.pack_into("<I", b, 160, 12)
struct.pack_into("<Q", b, 192 + 16, 4); b[192 + 24:192 + 28] = b"spin"
struct.pack_into("<Q", b, 256 + 16, 7); b[256 + 24:256 + 31] = b"hot.php"
sys.stdout.buffer.write(bytes(b) + b"X-Powered-By: PHP/8.2.36")' >"$dir/spin.bin"
	fi
	[ -d "$CORPUS" ] || return 0
	case "$name" in
	fuzz_pprof) folders=(pprof) ;;
	fuzz_pprof_legacy) folders=(pprof-legacy) ;;
	fuzz_jfr) folders=(jfr) ;;
	fuzz_folded) folders=(collapsed) ;;
	fuzz_perfscript) folders=(perf-script) ;;
	fuzz_speedscope) folders=(speedscope) ;;
	fuzz_cpuprofile) folders=(cpuprofile) ;;
	fuzz_otlp_json) folders=(otlp) ;;
	fuzz_detect) folders=(pprof pprof-legacy collapsed perf-script speedscope cpuprofile otlp) ;;
	esac
	for d in "${folders[@]}"; do
		for f in "$CORPUS/$d"/*; do
			[ -f "$f" ] && seed_file "$f" "$dir"
		done
	done
	if [ "$name" = fuzz_detect ] && [ -f "$CORPUS/jfr/jfrparser--wall_tick_sample.jfr.gz" ]; then
		seed_file "$CORPUS/jfr/jfrparser--wall_tick_sample.jfr.gz" "$dir"
	fi
	[ -x "$SEED_PROFD" ] || return 0
	case "$name" in
	fuzz_otlp | fuzz_otlp_direct)
		for f in "$CORPUS"/pprof/* "$CORPUS"/otlp/*; do
			[ -f "$f" ] && "$SEED_PROFD" convert "$f" "$dir/$(basename "$f").otlp.pb" 2>/dev/null || true
		done
		;;
	fuzz_otlp_json)
		for f in "$CORPUS"/pprof/*; do
			[ -f "$f" ] && "$SEED_PROFD" convert "$f" "$dir/$(basename "$f").otlp.json" 2>/dev/null || true
		done
		;;
	esac
}

run() {
	local seconds=$1
	shift
	local targets=("$@")
	if [ ${#targets[@]} = 0 ]; then
		for t in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$t" .c)"); done
	fi
	{
		echo "| target | seconds | executions | exec/s | coverage (cov) | corpus entries | crashes |"
		echo "| --- | --- | --- | --- | --- | --- | --- |"
	} >"$OUT/report.md"
	local status=0
	for name in "${targets[@]}"; do
		seeds "$name"
		mkdir -p "$OUT/crashes/$name" "$OUT/corpus/$name"
		touch "$OUT/$name.start"
		echo "=== $name: ${seconds}s"
		set +e
		local dirs=("$OUT/corpus/$name" "$OUT/seeds/$name" "$OUT/crashes/$name")
		[ -d "tests/fuzz/regress/$name" ] && dirs+=("tests/fuzz/regress/$name")
		"$OUT/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix="$OUT/crashes/$name/" \
			"${dirs[@]}" >"$OUT/$name.log" 2>&1
		local rc=$?
		set -e
		local runs cov units crashes
		runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$OUT/$name.log" | grep -oE '[0-9]+$' || echo "?")
		cov=$(grep -oE 'cov: [0-9]+' "$OUT/$name.log" | tail -1 | grep -oE '[0-9]+' || echo "?")
		units=$(ls "$OUT/corpus/$name" | wc -l)
		# new this run only: older crash files are replayed as regression inputs
		crashes=$(find "$OUT/crashes/$name" -newer "$OUT/$name.start" -type f \
			\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
		local rate="?"
		[ "$runs" != "?" ] && rate=$((runs / (seconds > 0 ? seconds : 1)))
		echo "| $name | $seconds | $runs | $rate | $cov | $units | $crashes |" >>"$OUT/report.md"
		tail -n 12 "$OUT/$name.log"
		if [ $rc != 0 ] || [ "$crashes" != 0 ]; then
			echo "=== $name: FAILED (exit $rc, $crashes crash files in $OUT/crashes/$name)"
			status=1
		fi
	done
	echo
	cat "$OUT/report.md"
	return $status
}

case "${1:-}" in
build) build ;;
run)
	[ $# -ge 2 ] || { echo "usage: $0 run SECONDS [target...]" >&2; exit 2; }
	secs=$2
	shift 2
	build
	run "$secs" "$@"
	;;
*)
	echo "usage: $0 build | run SECONDS [target...]" >&2
	exit 2
	;;
esac
