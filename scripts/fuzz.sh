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
#   scripts/fuzz.sh seeds [target...]  only write build-fuzz/seeds/<target>/
#   scripts/fuzz.sh render         rewrite fuzz.md's table from the ledger
#   scripts/fuzz.sh merge [target...]  minimize tests/fuzz/corpus/<target>/
#                                  with what runs added (libFuzzer -merge=1)
#   scripts/fuzz.sh long TOTAL [target...]   (make fuzz-long) split TOTAL
#                                  CPU seconds over the targets (network
#                                  decoders weigh 2, the others 1), run
#                                  $FUZZ_JOBS (default nproc) at a time,
#                                  merge the corpora, then append one row
#                                  per target to bench/results/fuzz-ledger.tsv
#                                  and rewrite the cumulative table of
#                                  bench/results/fuzz.md from it
#
# Targets link against the decoding layers (src/base, model, format,
# store (block decoders: fuzz_block), symbolize, query/top.c, the scrape
# config parser and Kubernetes object decoder, the agent's kubelet pod-list parser and ELF reader) compiled here with
# the same sanitizers;
# protobuf code is generated from src/format/proto into build-fuzz/gen.
# Seeds (build-fuzz/seeds-shared/<target>/): the matching folder of the shared
# corpus when $PROFD_CORPUS (or ../shared/corpus) exists, gzipped files
# inflated: fuzz_pprof <- pprof/, fuzz_pprof_legacy <- pprof-legacy/,
# fuzz_jfr <- jfr/, fuzz_folded <- collapsed/, fuzz_perfscript <-
# perf-script/, fuzz_speedscope <- speedscope/, fuzz_cpuprofile <-
# cpuprofile/, fuzz_otlp_json <- otlp/, fuzz_detect <- every folder but
# jfr/ (JFR files are large; one small recording instead); fuzz_otlp and
# fuzz_otlp_direct get pprof/ and otlp/ converted to OTLP protobuf, and
# fuzz_otlp_json pprof/
# converted to OTLP/JSON, by $PROFD_FAST (default build/profd) when it is
# built; fuzz_wal_pprof gets pprof/ (gunzipped, and gzipped again) behind
# a WAL pprof entry header. Targets without a corpus folder (fuzz_elf, ...) start from their
# regression inputs. FUZZ_OUT=dir builds and runs somewhere else than
# build-fuzz/ (e.g. while another run uses it).
# The kept corpus, tests/fuzz/corpus/<target>/, is read by every run (after
# the run's own corpus, build-fuzz/corpus/<target>/, where libFuzzer writes
# what it finds) and minimized by `merge`, so fuzzing time accumulates
# across runs and machines; run inputs are capped at $FUZZ_MAX_LEN bytes
# (64 KiB: a 2 MB JFR recording runs at a few executions a second), kept
# ones at $FUZZ_KEPT_MAX_LEN (32 KiB) and $FUZZ_KEPT_KIB (160 KiB) per
# target, so the repository stays lean. The ELF, DWARF and pclntab targets are
# seeded with objects built here: a small C program compiled with -g
# (object, executable, DWARF 4 and 5, compressed sections, separate debug
# file, shared object, stripped) and the .gopclntab of a Go hello world
# cut to its first functions by scripts/fuzz_pclntab_seed.py.
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
KEPT=tests/fuzz/corpus
MAX_LEN=${FUZZ_MAX_LEN:-65536}
KEPT_MAX_LEN=${FUZZ_KEPT_MAX_LEN:-32768} # per input kept in tests/fuzz/corpus
KEPT_KIB=${FUZZ_KEPT_KIB:-160}           # per target kept there
LEDGER=bench/results/fuzz-ledger.tsv
REPORT_MD=bench/results/fuzz.md
# Decoders of network input (ingest, push, scrape): twice the time in `long`.
NETWORK="fuzz_pprof fuzz_otlp fuzz_otlp_direct fuzz_otlp_json fuzz_jfr fuzz_push fuzz_folded
fuzz_cpuprofile fuzz_speedscope fuzz_perfscript fuzz_pprof_legacy fuzz_detect fuzz_k8s_sd"

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
		ls src/base/*.c src/model/*.c src/format/*.c src/store/*.c src/symbolize/*.c src/query/top.c src/query/change.c \
			src/scrape/config.c src/scrape/relabel.c src/scrape/k8s.c src/scrape/k8s_decode.c src/scrape/fetch.c src/query/units.c src/mcp/mcp.c \
			src/mcp/tools*.c src/mcp/text.c src/mcp/resources.c src/agent/k8s.c src/agent/elfinfo.c \
			src/agent/interp.c src/agent/interp_python.c src/agent/interp_ruby.c \
			src/agent/interp_php.c src/agent/interp_php_decode.c src/agent/jit_v8.c src/agent/jit_v8_decode.c \
			src/agent/jit_hotspot.c src/agent/jit_hotspot_decode.c src/agent/procmaps.c src/agent/tracectx.c 2>/dev/null
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

# Small ELF objects built here, with DWARF in its usual shapes, into @dir.
native_seeds() {
	local dir=$1 cc=${CC:-cc} src="$OUT/seed-src/prog.c" o="$OUT/seed-src"
	[ -f "$dir/prog" ] && return 0
	mkdir -p "$o"
	cat >"$src" <<'C'
#include <stdio.h>
struct pt { int x, y; };
static inline int sq(int v) { return v * v; }
static int dist(const struct pt *a, const struct pt *b) { return sq(a->x - b->x) + sq(a->y - b->y); }
int main(int argc, char **argv)
{
	struct pt a = { argc, 2 }, b = { 3, argv[0][0] };
	printf("%d\n", dist(&a, &b));
	return 0;
}
C
	$cc -g -O2 -c "$src" -o "$dir/prog.o" || return 0
	$cc -g -O2 -Wl,--build-id "$src" -o "$dir/prog"
	$cc -g -O2 -gdwarf-4 "$src" -o "$dir/prog.dwarf4" 2>/dev/null || true
	$cc -g -O2 -gdwarf-5 "$src" -o "$dir/prog.dwarf5" 2>/dev/null || true
	$cc -g -gz "$src" -o "$dir/prog.gz" 2>/dev/null || true
	$cc -g -O2 -shared -fPIC "$src" -o "$dir/libprog.so" 2>/dev/null || true
	$cc -O2 -s "$src" -o "$dir/prog.stripped" 2>/dev/null || true
	objcopy --only-keep-debug "$dir/prog" "$dir/prog.debug" 2>/dev/null || true
	$CLANG -g -O1 -c "$src" -o "$dir/prog.clang.o" 2>/dev/null || true
}

# The .gopclntab of a Go hello world built here, cut to its first functions.
go_seeds() {
	local dir=$1 o="$OUT/seed-src/go"
	[ -f "$dir/hello.pclntab" ] && return 0
	command -v go >/dev/null || return 0
	mkdir -p "$o"
	printf 'package main\n\nfunc main() { println("hello") }\n' >"$o/main.go"
	printf 'module hello\n\ngo 1.20\n' >"$o/go.mod"
	(cd "$o" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o hello .) 2>/dev/null || return 0
	objcopy -O binary --only-section=.gopclntab "$o/hello" "$o/hello.full" || return 0
	python3 scripts/fuzz_pclntab_seed.py "$o/hello.full" "$dir/hello.pclntab" || true
	python3 scripts/fuzz_pclntab_seed.py "$o/hello.full" "$dir/hello4.pclntab" 4 || true
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
	if [ "$name" = fuzz_k8s_sd ]; then # role byte + a pod, an endpoints, a watch event (tests/unit/scrape/test_k8s.c)
		printf '\0%s' '{"metadata":{"name":"web-1","namespace":"shop","uid":"u1","resourceVersion":"12","labels":{"app.kubernetes.io/name":"web"},"annotations":{"profiles.grafana.com/cpu.scrape":"true"},"ownerReferences":[{"kind":"ReplicaSet","name":"web","controller":true}]},"spec":{"nodeName":"n1","containers":[{"name":"app","image":"web:1","ports":[{"name":"pprof","containerPort":6060,"protocol":"TCP"}]}],"initContainers":[{"name":"init"}]},"status":{"phase":"Running","podIP":"10.0.0.7","hostIP":"10.0.0.1","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"app","containerID":"containerd://abc"}]}}' >"$dir/pod.json"
		printf '\1%s' '{"metadata":{"name":"web","namespace":"shop"},"subsets":[{"addresses":[{"ip":"10.0.0.7","nodeName":"n1","targetRef":{"kind":"Pod","name":"web-1"}}],"notReadyAddresses":[{"ip":"fd00::1"}],"ports":[{"name":"pprof","port":6060}]}]}' >"$dir/endpoints.json"
		printf '\0%s' '{"type":"MODIFIED","object":{"metadata":{"name":"web-1","namespace":"shop","resourceVersion":"13"},"status":{"podIP":"10.0.0.7"}}}' >"$dir/event.json"
		printf '\2%s' '{"metadata":{"name":"web","namespace":"shop"},"spec":{"type":"LoadBalancer","clusterIP":"10.96.0.1","ports":[{"port":80}]},"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}' >"$dir/service.json"
		printf '\3%s' '{"metadata":{"name":"n1"},"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}' >"$dir/node.json"
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
	case "$name" in
	fuzz_dwarf | fuzz_elf | fuzz_elfinfo) native_seeds "$dir" ;;
	fuzz_gopclntab) go_seeds "$dir" ;;
	esac
	# Copies and conversions of the shared corpus go to seeds-shared/: runs
	# read them, `merge` does not keep them (third-party files, licensed
	# per file in its MANIFEST.md).
	dir="$OUT/seeds-shared/$name"
	mkdir -p "$dir"
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
	if [ "$name" = fuzz_wal_pprof ]; then # each pprof file (gunzipped) behind an entry header
		python3 - "$dir" "$CORPUS"/pprof/* <<'PY' || true
import gzip, os, struct, sys
for f in sys.argv[2:]:
    b = open(f, "rb").read()
    try:
        b = gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b
    except Exception:
        continue
    s = lambda t: struct.pack("<I", len(t)) + t
    for gz in (None, gzip.compress(b)):  # stored as is, and as gzip
        h = struct.pack("<IIqqq", len(b), len(gz) if gz else 0, 1700000000 * 10**9, 10**10, 0)
        h += s(b"process_cpu") + struct.pack("<I", 1) + s(b"service.name") + s(b"seed")
        h += struct.pack("<q", 0) + s(b"")
        name = os.path.basename(f) + (".gz.rec" if gz else ".rec")
        open(os.path.join(sys.argv[1], name), "wb").write(h + (gz or b))
PY
	fi
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

# Runs target @1 for @2 seconds; its report row goes to $OUT/<target>.row.
run_one() {
	local name=$1 seconds=$2
	seeds "$name"
	mkdir -p "$OUT/crashes/$name" "$OUT/corpus/$name" "$KEPT/$name"
	touch "$OUT/$name.start"
	local dirs=("$OUT/corpus/$name" "$KEPT/$name" "$OUT/seeds/$name" "$OUT/seeds-shared/$name"
		"$OUT/crashes/$name")
	[ -d "tests/fuzz/regress/$name" ] && dirs+=("tests/fuzz/regress/$name")
	set +e
	"$OUT/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$MAX_LEN" \
		-print_final_stats=1 -artifact_prefix="$OUT/crashes/$name/" \
		"${dirs[@]}" >"$OUT/$name.log" 2>&1
	local rc=$?
	set -e
	local runs cov ft units crashes
	runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$OUT/$name.log" | grep -oE '[0-9]+$' || echo "?")
	cov=$(grep -oE 'cov: [0-9]+' "$OUT/$name.log" | tail -1 | grep -oE '[0-9]+' || echo "?")
	ft=$(grep -oE 'ft: [0-9]+' "$OUT/$name.log" | tail -1 | grep -oE '[0-9]+' || echo "?")
	units=$(ls "$OUT/corpus/$name" | wc -l)
	# new this run only: older crash files are replayed as regression inputs
	crashes=$(find "$OUT/crashes/$name" -newer "$OUT/$name.start" -type f \
		\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	local rate="?"
	[ "$runs" != "?" ] && rate=$((runs / (seconds > 0 ? seconds : 1)))
	[ $rc != 0 ] && [ "$crashes" = 0 ] && crashes=1 # died without an artifact
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$seconds" "$runs" "$rate" "$cov" "$ft" \
		"$units" "$crashes" >"$OUT/$name.row"
	if [ $rc != 0 ] || [ "$crashes" != 0 ]; then
		echo "=== $name: FAILED (exit $rc, $crashes crash files in $OUT/crashes/$name)"
		return 1
	fi
	echo "=== $name: ${seconds}s, $runs runs, cov $cov"
}

all_targets() {
	local t
	for t in tests/fuzz/fuzz_*.c; do basename "$t" .c; done
}

report() {
	local name
	echo "| target | seconds | executions | exec/s | coverage (cov) | features (ft) | new corpus entries | crashes |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	for name in "$@"; do
		[ -f "$OUT/$name.row" ] && awk -F'\t' '{ s = "|"; for (i = 1; i <= NF; i++) s = s " " $i " |"; print s }' "$OUT/$name.row"
	done
	return 0
}

run() {
	local seconds=$1
	shift
	local targets=("$@") status=0 name
	[ ${#targets[@]} = 0 ] && mapfile -t targets < <(all_targets)
	for name in "${targets[@]}"; do
		rm -f "$OUT/$name.row"
		echo "=== $name: ${seconds}s"
		run_one "$name" "$seconds" || status=1
		tail -n 12 "$OUT/$name.log"
	done
	report "${targets[@]}" >"$OUT/report.md"
	echo
	cat "$OUT/report.md"
	return $status
}

# Minimizes the kept corpus of each target with what runs found and the
# seeds made here (not the shared corpus's files): the libFuzzer -merge=1
# minimum, inputs cut to $KEPT_MAX_LEN bytes; over $KEPT_KIB KiB, only the
# inputs that add edges (not hit counts: -use_counters=0), then the cut
# halved (down to 256 bytes), so the repository keeps a few MB for every
# target together (JFR inputs, 15-60 KB each, get 64 KiB and 20 times the
# budget).
merge() {
	local targets=("$@") name d
	[ ${#targets[@]} = 0 ] && mapfile -t targets < <(all_targets)
	for name in "${targets[@]}"; do
		local new="$OUT/merge/$name" dirs=() len=$KEPT_MAX_LEN budget=$KEPT_KIB kib ok=1
		# JFR chunks are 15-60 KB even when small: fewer, larger inputs
		[ "$name" = fuzz_jfr ] && len=$MAX_LEN budget=$((KEPT_KIB * 20))
		local counters=1
		for d in "$KEPT/$name" "$OUT/corpus/$name" "$OUT/seeds/$name"; do
			[ -d "$d" ] && dirs+=("$d")
		done
		while :; do
			rm -rf "$new"
			mkdir -p "$new"
			if ! "$OUT/$name" -merge=1 -max_len="$len" -use_counters=$counters -timeout=10 -rss_limit_mb=2048 \
				"$new" "${dirs[@]}" >"$OUT/$name.merge.log" 2>&1; then
				ok=0
				break
			fi
			kib=$(($(find "$new" -type f -exec cat {} + | wc -c) / 1024))
			[ "$kib" -le "$budget" ] || [ "$len" -le 256 ] && break
			# over budget: first keep only inputs that add edges, then cut
			if [ $counters = 1 ]; then counters=0; else len=$((len / 2)); fi
		done
		if [ $ok = 0 ]; then
			echo "=== $name: merge failed, $KEPT/$name left as it was (see $OUT/$name.merge.log)"
			continue
		fi
		rm -rf "${KEPT:?}/$name"
		mv "$new" "$KEPT/$name"
		echo "=== $name: $(ls "$KEPT/$name" | wc -l) inputs, $kib KiB kept (inputs cut to $len bytes, counters $counters)"
	done
}

# Splits @1 CPU seconds over the targets and runs $FUZZ_JOBS at a time.
long() {
	local total=$1
	shift
	local targets=("$@") name jobs=${FUZZ_JOBS:-$(nproc)} wsum=0 status=0 running=0
	[ ${#targets[@]} = 0 ] && mapfile -t targets < <(all_targets)
	declare -A secs
	for name in "${targets[@]}"; do
		case " $(echo $NETWORK) " in *" $name "*) wsum=$((wsum + 2)) ;; *) wsum=$((wsum + 1)) ;; esac
	done
	for name in "${targets[@]}"; do
		local w=1
		case " $(echo $NETWORK) " in *" $name "*) w=2 ;; esac
		secs[$name]=$((total * w / wsum))
		[ "${secs[$name]}" -lt 10 ] && secs[$name]=10
		rm -f "$OUT/$name.row"
	done
	local started
	started=$(date -u +%Y-%m-%dT%H:%MZ)
	echo "=== long run: $total CPU seconds over ${#targets[@]} targets, $jobs at a time"
	for name in "${targets[@]}"; do
		seeds "$name" # before forking: seeds share $OUT/seed-src
	done
	for name in "${targets[@]}"; do
		if [ $running -ge "$jobs" ]; then
			wait -n || status=1
			running=$((running - 1))
		fi
		run_one "$name" "${secs[$name]}" &
		running=$((running + 1))
	done
	while [ $running -gt 0 ]; do
		wait -n || status=1
		running=$((running - 1))
	done
	merge "${targets[@]}"
	report "${targets[@]}" >"$OUT/report.md"
	record "$started" "${targets[@]}"
	cat "$OUT/report.md"
	return $status
}

# Appends this run's rows to the ledger and rewrites the table in fuzz.md.
record() {
	local started=$1 name commit
	shift
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo "?")
	[ -f "$LEDGER" ] || printf 'run\tcommit\ttarget\tseconds\texecutions\texec_per_s\tcov\tft\tkept_inputs\tcrashes\n' >"$LEDGER"
	for name in "$@"; do
		[ -f "$OUT/$name.row" ] || continue
		local kept
		kept=$(ls "$KEPT/$name" 2>/dev/null | wc -l)
		awk -F'\t' -v OFS='\t' -v run="$started" -v c="$commit" -v kept="$kept" \
			'{ print run, c, $1, $2, $3, $4, $5, $6, kept, $8 }' "$OUT/$name.row" >>"$LEDGER"
	done
	render
	echo "=== recorded in $LEDGER and $REPORT_MD"
}

# Rewrites the generated table of fuzz.md from the ledger.
render() {
	python3 - "$LEDGER" "$REPORT_MD" "$KEPT" <<'PY'
import collections, os, sys
ledger, md, kept = sys.argv[1:4]
rows = [l.rstrip("\n").split("\t") for l in open(ledger)][1:]
per = collections.OrderedDict()
runs = collections.OrderedDict()
for r in sorted(rows, key=lambda r: r[2]):
    t = per.setdefault(r[2], {"s": 0, "n": 0, "x": 0, "crash": 0})
    t["s"] += int(r[3]); t["n"] += 1; t["crash"] += int(r[9])
    t["x"] += int(r[4]) if r[4].isdigit() else 0
    t["last"] = r
for r in rows:
    k = (r[0], r[1])
    u = runs.setdefault(k, {"s": 0, "t": 0, "crash": 0})
    u["s"] += int(r[3]); u["t"] += 1; u["crash"] += int(r[9])
def kib(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) // 1024 if os.path.isdir(d) else 0
out = ["<!-- fuzz-ledger: begin (generated by scripts/fuzz.sh long from fuzz-ledger.tsv) -->",
       "## Cumulative fuzzing time per target", "",
       "Sum of every `make fuzz-long` run recorded in `bench/results/fuzz-ledger.tsv`",
       "(earlier runs, about 135 s per target, are not in the ledger). Goal: 1 h per",
       "decoder with 0 crashes. cov, ft and exec/s are the last run's; kept inputs",
       "and KiB are `tests/fuzz/corpus/<target>/` now.", "",
       "| target | hours | runs | executions | last exec/s | last cov | last ft | kept inputs | KiB | crashes | 1 h |",
       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for name, t in per.items():
    l = t["last"]
    h = t["s"] / 3600
    out.append("| %s | %.2f | %d | %s | %s | %s | %s | %s | %d | %d | %s |" % (
        name, h, t["n"], format(t["x"], ","), l[5], l[6], l[7], l[8],
        kib(os.path.join(kept, name)), t["crash"], "yes" if h >= 1 else "no"))
tot = sum(t["s"] for t in per.values())
out += ["", "Total: %.2f CPU hours over %d targets." % (tot / 3600, len(per)), "",
        "### Runs", "", "| run (UTC) | commit | targets | CPU seconds | crashes |",
        "| --- | --- | --- | --- | --- |"]
for (run, c), u in runs.items():
    out.append("| %s | %s | %d | %d | %d |" % (run, c, u["t"], u["s"], u["crash"]))
out.append("<!-- fuzz-ledger: end -->")
text = open(md).read() if os.path.exists(md) else "# Fuzzing\n"
b, e = text.find("<!-- fuzz-ledger: begin"), text.find("<!-- fuzz-ledger: end -->")
block = "\n".join(out) + "\n"
if b >= 0 and e > b:
    text = text[:b] + block + text[e + len("<!-- fuzz-ledger: end -->\n"):]
else:
    text = text.rstrip("\n") + "\n\n" + block
open(md, "w").write(text)
PY
}

usage() {
	echo "usage: $0 build | run SECONDS [target...] | render | seeds [target...] | merge [target...] | long TOTAL_SECONDS [target...]" >&2
	exit 2
}

case "${1:-}" in
build) build ;;
run | long)
	[ $# -ge 2 ] || usage
	mode=$1 secs=$2
	shift 2
	build
	"$mode" "$secs" "$@"
	;;
merge)
	shift
	build
	merge "$@"
	;;
render) render ;;
seeds)
	shift
	[ $# = 0 ] && set -- $(all_targets)
	for t in "$@"; do seeds "$t"; done
	;;
*) usage ;;
esac
