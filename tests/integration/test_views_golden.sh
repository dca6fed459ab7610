#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_views_golden.sh - identical answers: every view the CLI and the
# server offer, over the shared corpus, hashed and compared with
# tests/golden/views.sha256 (made with the binary before a refactoring;
# a change that must not change answers keeps every hash). Views:
#   - CLI, per corpus file: `profd top --json`, `profd convert` to each
#     output format (OTLP protobuf, OTLP/JSON, pprof raw and gzipped,
#     folded), `profd flamegraph` as SVG and folded;
#   - server: a few corpus files ingested (pprof, JFR, OTLP/JSON, folded)
#     at fixed times, then per profile type the flame graph (and
#     inverted), table, flame chart, diff, series, sandwich (callers and
#     callees of the top function), the exports, labels, label values and
#     profile types.
# The server views are taken twice and must be byte-identical: from the
# head (a dataset whose block_duration keeps the ingested hours in it),
# then, after a restart with the defaults replays the WAL into the head
# and flushes it to a block, from the block; a view must not depend on
# where or in which order its data is stored.
# Only hashes are kept, never the outputs (they embed corpus data).
# Nothing here depends on the clock: ingest times and query ranges are
# fixed; a view that fails is hashed as its exit status and stderr.
# REGEN=1 rewrites the hash file instead of comparing.
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
GOLDEN=tests/golden/views.sha256

if [ ! -d "$CORPUS/pprof" ]; then
	echo "skip: no corpus at $CORPUS (set PROFD_CORPUS)"
	exit 0
fi
[ -x "$PROFD" ] || { echo "FAIL: $PROFD is not built"; exit 1; }
source tests/integration/server_lib.sh

got=$tmp/views.sha256
: >"$got"

# record NAME FILE: append "sha256  NAME" for FILE.
record() {
	printf '%s  %s\n' "$(sha256sum <"$2" | cut -d' ' -f1)" "$1" >>"$got"
}

# cli NAME ARGS...: run profd ARGS, record stdout (+ status and stderr on failure).
cli() {
	local name=$1 rc
	shift
	"$PROFD" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		{ echo "rc=$rc"; sed "s|$tmp|TMP|g; s|$CORPUS|CORPUS|g" "$tmp/err"; } >>"$tmp/out"
	fi
	record "$name" "$tmp/out"
}

# cli_file NAME OUT ARGS...: run profd ARGS that write OUT; record OUT (or the failure).
cli_file() {
	local name=$1 out=$2 rc
	shift 2
	rm -f "$out"
	"$PROFD" "$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || [ ! -f "$out" ]; then
		{ echo "rc=$rc"; sed "s|$tmp|TMP|g; s|$CORPUS|CORPUS|g" "$tmp/err"; } >"$out"
	fi
	record "$name" "$out"
}

files=()
for d in pprof pprof-legacy jfr otlp collapsed perf-script speedscope cpuprofile; do
	for f in "$CORPUS/$d"/*; do
		[ -f "$f" ] && files+=("$f")
	done
done

for f in "${files[@]}"; do
	b=${f#"$CORPUS"/}
	cli "top $b" top --json "$f"
	for ext in otlp.pb otlp.json pb pb.gz folded; do
		cli_file "convert $b .$ext" "$tmp/c.$ext" convert "$f" "$tmp/c.$ext"
	done
	cli_file "flamegraph $b svg" "$tmp/f.svg" flamegraph --title t --no-symbolize "$f" -o "$tmp/f.svg"
	cli_file "flamegraph $b folded" "$tmp/f.folded" flamegraph --format folded --no-symbolize \
		"$f" -o "$tmp/f.folded"
done

# --- server views -----------------------------------------------------------------
mv "$got" "$tmp/cli.sha256"
: >"$got"
cat >"$tmp/head.yaml" <<'EOF2'
default_dataset: default
datasets:
  - name: default
    block_duration: 7d
EOF2
start_server --config "$tmp/head.yaml"
T0=1700000000 # ingest times (unix seconds), one hour apart per file
FROM=1600000000000 TO=1800000000000 # query range (ms), holds every sample
post() { # post NAME FILE QUERY...: POST /ingest
	local name=$1 f=$2 q=$3 c
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		--data-binary "@$f" "$base/ingest?$q")
	[ "$c" = 200 ] || fail "ingest $name: HTTP $c $(head -c 200 "$tmp/body")"
}
i=0
for spec in "pprof/gen--cpu.pprof pprof" "pprof/gen--heap.pprof pprof" \
	"pprof/pyroscope--go.cpu.labels.pprof pprof" "pprof/parca--two-stacks.pb.gz pprof" \
	"jfr/gen--jdk17-profile.jfr jfr" "collapsed/gen--perf-collapsed-fp.txt folded"; do
	set -- $spec
	[ -f "$CORPUS/$1" ] || continue
	i=$((i + 1))
	post "$1" "$CORPUS/$1" "name=golden$i%7Bfile%3D%22$(basename "$1")%22%7D&format=$2&from=$((T0 + 3600 * i))&until=$((T0 + 3600 * i + 10))"
done
if [ -f "$CORPUS/otlp/pyroscope--otel-ebpf-profile.pb.json" ]; then
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' \
		--data-binary "@$CORPUS/otlp/pyroscope--otel-ebpf-profile.pb.json" "$base/v1development/profiles")
	[ "$c" = 200 ] || fail "ingest OTLP/JSON: HTTP $c"
fi

# api NAME PATH [curl -G args]: record the body of GET PATH (and its status).
api() {
	local name=$1 p=$2 c
	shift 2
	c=$(curl -s --noproxy '*' -G -o "$tmp/body" -w '%{http_code}' "$@" "$base$p")
	echo "status=$c" >>"$tmp/body"
	record "$name" "$tmp/body"
}
# views: record every server view into $got.
views() {
	R=(--data-urlencode "from=$FROM" --data-urlencode "to=$TO")
	api "profile-types" /api/v1/profile-types "${R[@]}"
	api "labels" /api/v1/labels "${R[@]}"
	api "label values file" /api/v1/labels/file/values "${R[@]}"
	api "label values service.name" /api/v1/labels/service.name/values "${R[@]}"
	types=$(curl -s --noproxy '*' -G "${R[@]}" "$base/api/v1/profile-types" |
		python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
	mid=$(((T0 + 3600 * 4) * 1000))
	for t in $types; do
		T=(--data-urlencode "type=$t" "${R[@]}")
		api "$t flamegraph" /api/v1/flamegraph "${T[@]}"
		api "$t flamegraph inverted" /api/v1/flamegraph "${T[@]}" --data-urlencode invert=true \
			--data-urlencode max_nodes=50
		api "$t table" /api/v1/table "${T[@]}"
		api "$t table frame" /api/v1/table "${T[@]}" --data-urlencode granularity=frame
		api "$t series" /api/v1/series "${T[@]}" --data-urlencode step=1h --data-urlencode group_by=file
		api "$t flamechart" /api/v1/flamechart "${T[@]}" --data-urlencode group_by=file
		api "$t diff" /api/v1/diff --data-urlencode "type=$t" --data-urlencode "a_from=$FROM" \
			--data-urlencode "a_to=$mid" --data-urlencode "b_from=$mid" --data-urlencode "b_to=$TO"
		api "$t export folded" /api/v1/export/folded "${T[@]}"
		api "$t export svg" /api/v1/export/svg "${T[@]}" --data-urlencode title=t
		api "$t export pprof" /api/v1/export/pprof "${T[@]}"
		curl -s --noproxy '*' -G -o "$tmp/table.json" "${T[@]}" "$base/api/v1/table"
		fn=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1])).get("rows") or [{}]
print(r[0].get("name", ""))' "$tmp/table.json" 2>/dev/null)
		[ -n "$fn" ] && api "$t sandwich" /api/v1/sandwich "${T[@]}" --data-urlencode "function=$fn"
	done
}

# From the head: nothing flushed (block_duration 7d), so every answer comes from it.
views
grep -q "flushed head to block" "$tmp/log.$n" && fail "the head was flushed under block_duration 7d"
head_views=$got.head
mv "$got" "$head_views"
: >"$got"
stop_server TERM
# From a block: the defaults flush the replayed head (its rows span more
# than 1 h) on the first maintenance pass, about 10 s after the start;
# the views wait for it.
start_server
wait_for 60 'grep -q "flushed head to block" "$tmp/log.$n"' "the head is flushed to a block"
views
if cmp -s "$head_views" "$got"; then
	ok "the server views from the head and from the block are identical"
else
	while IFS= read -r v; do fail "view differs between head and block: $v"; done \
		< <(diff <(sort -k2 "$head_views") <(sort -k2 "$got") | sed -n 's/^> [0-9a-f]*  //p')
fi
cat "$tmp/cli.sha256" "$got" >"$got.all"
mv "$got.all" "$got"

n_views=$(wc -l <"$got")
if [ "${REGEN:-}" = 1 ]; then
	mkdir -p "$(dirname "$GOLDEN")"
	cp "$got" "$GOLDEN"
	ok "wrote $GOLDEN ($n_views views)"
elif [ ! -f "$GOLDEN" ]; then
	fail "no $GOLDEN (REGEN=1 with the reference binary writes it)"
else
	changed=$(diff <(sort -k2 "$GOLDEN") <(sort -k2 "$got") | sed -n 's/^> [0-9a-f]*  //p')
	missing=$(diff <(cut -d' ' -f3- "$GOLDEN" | sort) <(cut -d' ' -f3- "$got" | sort) |
		sed -n 's/^< //p')
	[ -n "$missing" ] && while IFS= read -r v; do fail "view missing: $v"; done <<<"$missing"
	if [ -n "$changed" ]; then
		while IFS= read -r v; do fail "view changed: $v"; done <<<"$changed"
	else
		ok "$n_views views identical to $GOLDEN"
	fi
fi
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
