#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_series_limit.sh - the per-dataset active series limit
# (limits.max_active_series, server/series.h), here 3 series:
#   - s1, s2, s3 are accepted; a request that would add s4 gets 413
#     (OTLP/JSON: google.rpc.Status) naming the limit, and s4 is not stored;
#   - s1 (already active) keeps ingesting after the limit is reached;
#   - a request with a profile of s2 and one of new s5 stores s2's and
#     answers 200 with partial_success (1 rejected profile) naming the
#     limit; s5 is not stored;
#   - the refusal is RESOURCE_EXHAUSTED (8) in the OTLP google.rpc.Status,
#     and Pyroscope /ingest of a new series is refused the same way;
#   - another dataset has its own count; /metrics shows the gauges, the
#     rejects and the values per label (profd_label_values).
source "$(dirname "$0")/ingest_lib.sh"

cat >"$tmp/profd.yaml" <<'EOF2'
datasets: [{name: a}, {name: b}]
default_dataset: a
limits: {max_active_series: 3}
EOF2
start_server --config "$tmp/profd.yaml"
for s in s1 s2 s3 s4; do
	"$MKOTLP" --attr service.name=$s --stack "main;work_$s=10" "$tmp/$s.pb"
done
two_json() { # two_json SERVICE1 SERVICE2: one request, two profiles of 10 and 20
	cat <<EOF2
{"resourceProfiles":[
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"$1"}}]},
  "scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},
   "periodType":{"typeStrindex":1,"unitStrindex":2},"period":"10000000",
   "samples":[{"stackIndex":1,"values":["10"]}]}]}]},
 {"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"$2"}}]},
  "scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},
   "periodType":{"typeStrindex":1,"unitStrindex":2},"period":"10000000",
   "samples":[{"stackIndex":1,"values":["20"]}]}]}]}],
 "dictionary":{"stringTable":["","cpu","nanoseconds","main"],
  "functionTable":[{},{"nameStrindex":3}],"locationTable":[{},{"lines":[{"functionIndex":1}]}],
  "stackTable":[{},{"locationIndices":[1]}]}}
EOF2
}
tot() { total "$CPU" "{service.name=\"$1\"}" "${@:2}"; }

for s in s1 s2 s3; do
	otlp "$tmp/$s.pb"
	check "new series $s under the limit -> 200" [ "$code" = 200 ]
done
otlp "$tmp/s4.pb"
checkx "a 4th series -> 413 naming max_active_series" \
	'[ "$code" = 413 ] && rpc_status | grep -q "^8 limit max_active_series (3) reached in dataset .a.: 1 new series refused"'
check "s4 not stored" [ "$(tot s4)" = 0 ]
otlp "$tmp/s1.pb"
check "an active series keeps ingesting at the limit -> 200" [ "$code" = 200 ]
check "s1 has both requests (20)" [ "$(tot s1)" = 20 ]

two_json s2 s5 >"$tmp/two.json"
CT=application/json otlp "$tmp/two.json"
checkx "s2 + new s5 in one request -> 200, partialSuccess naming the limit" \
	'[ "$code" = 200 ] && body_has "\"rejectedProfiles\":\"1\"" && body_has "limit max_active_series (3)"'
check "s2 got its 10 again (20 in all)" [ "$(tot s2)" = 20 ]
check "s5 not stored" [ "$(tot s5)" = 0 ]

req POST "/ingest?name=s6.cpu&from=1&until=2&spyName=test" --data-binary 'main;work 5'
checkx "Pyroscope /ingest of a new series -> refused with the limit named" \
	'[ "$code" = 413 ] && body_has "max_active_series"'

otlp "$tmp/s4.pb" -H 'X-Profd-Dataset: b'
check "dataset b counts its own series -> s4 accepted there" [ "$code" = 200 ]
check "s4 is in b" [ "$(tot s4 -H 'X-Profd-Dataset: b')" = 10 ]

req GET /metrics
checkx "metrics: 3 active series in a, 1 in b, limit 3" \
	'body_has "^profd_active_series{dataset=\"a\"} 3$" && body_has "^profd_active_series{dataset=\"b\"} 1$" &&
	 body_has "^profd_active_series_limit 3$"'
checkx "metrics count the refusals" 'body_has "^profd_ingest_rejects_total{reason=\"max_active_series\"} 3$"'
checkx "metrics: label cardinality, service.name 3 values in a, 1 in b" \
	'body_has "^profd_label_values{dataset=\"a\",label=\"service.name\"} 3$" &&
	 body_has "^profd_label_values{dataset=\"b\",label=\"service.name\"} 1$"'
require_alive "after the series limit tests"
stop_server TERM
finish
