// SPDX-License-Identifier: Apache-2.0
// otlp_decode.mjs - decode an OTLP ExportProfilesServiceRequest with npm
// protobufjs and profd's own .proto files (src/format/proto), independently
// of profd's C decoder. Checks every dictionary index the request uses and
// prints, per OTLP Profile, its sample type, observation count and total:
//   {"profiles":[{"type":"cpu","unit":"nanoseconds","samples":N,"total":"V"}]}
// (totals as decimal strings: they may exceed 2^53). Observations: a Sample
// with values counts one per value; one with only timestamps, one per
// timestamp, each worth 1 (docs/formats.md, "OTLP profiles messages", Sample).
// usage: node otlp_decode.mjs PROTO_DIR FILE
import fs from "node:fs";
import path from "node:path";
import protobuf from "protobufjs";

const [protoDir, file] = process.argv.slice(2);
const root = new protobuf.Root();
root.resolvePath = (origin, target) =>
	path.isAbsolute(target) ? target : path.join(protoDir, target);
root.loadSync("opentelemetry/proto/collector/profiles/v1development/profiles_service.proto", {
	keepCase: true,
});
const Request = root.lookupType(
	"opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest",
);
const req = Request.decode(fs.readFileSync(file));
const d = req.dictionary || {};
const table = (name) => d[name] || [];
const strings = table("string_table").map((b) => Buffer.from(b).toString("utf8"));
const errors = [];
const check = (what, idx, len) => {
	if (!(idx >= 0 && idx < len)) errors.push(`${what} = ${idx} out of range (${len})`);
};
const big = (v) => BigInt(v.toString());

if (strings.length && strings[0] !== "") errors.push("string_table[0] is not empty");
table("stack_table").forEach((s, i) =>
	(s.location_indices || []).forEach((l, k) =>
		check(`stack_table[${i}].location_indices[${k}]`, l, table("location_table").length),
	),
);
table("location_table").forEach((l, i) => {
	check(`location_table[${i}].mapping_index`, l.mapping_index || 0, table("mapping_table").length);
	(l.lines || []).forEach((ln, k) =>
		check(`location_table[${i}].lines[${k}]`, ln.function_index || 0, table("function_table").length),
	);
});
table("function_table").forEach((f, i) =>
	check(`function_table[${i}].name_strindex`, f.name_strindex || 0, Math.max(strings.length, 1)),
);

const out = [];
for (const rp of req.resource_profiles || [])
	for (const sp of rp.scope_profiles || [])
		for (const p of sp.profiles || []) {
			const st = p.sample_type || {};
			let samples = 0;
			let total = 0n;
			(p.samples || []).forEach((s, i) => {
				check(`sample ${i} stack_index`, s.stack_index || 0, table("stack_table").length);
				(s.attribute_indices || []).forEach((a) =>
					check(`sample ${i} attribute`, a, table("attribute_table").length),
				);
				const values = s.values || [];
				const ts = s.timestamps_unix_nano || [];
				if (values.length && ts.length && values.length !== ts.length)
					errors.push(`sample ${i}: ${values.length} values, ${ts.length} timestamps`);
				if (values.length) {
					samples += values.length;
					for (const v of values) total += big(v);
				} else {
					samples += ts.length;
					total += BigInt(ts.length);
				}
			});
			out.push({
				type: strings[st.type_strindex || 0] ?? null,
				unit: strings[st.unit_strindex || 0] ?? null,
				samples,
				total: total.toString(),
			});
		}
if (errors.length) {
	console.error(errors.slice(0, 10).join("\n"));
	process.exit(1);
}
console.log(JSON.stringify({ profiles: out }));
