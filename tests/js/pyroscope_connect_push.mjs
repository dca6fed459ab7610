// SPDX-License-Identifier: Apache-2.0
// pyroscope_connect_push.mjs - a Connect unary client of Pyroscope's push
// API (POST /push.v1.PusherService/Push, what Grafana Alloy's
// pyroscope.write sends), independent of profd's C code: the pprof
// profile and the PushRequest are built and encoded by protobufjs from
// profd's .proto files (src/format/proto/profile.proto and
// push/v1/push.proto), gzipped by node's zlib, and sent over HTTP/1.1 with
// fetch. Used by tests/integration/test_ingest_push.sh.
//
//   node pyroscope_connect_push.mjs URL proto|json SERVICE [TOKEN]
//
// The profile: cpu/nanoseconds samples main;work = 70 and main;idle = 30
// (total 100), labels __name__=process_cpu, service_name=SERVICE,
// env=connect. Prints one JSON line: {"status":..,"contentType":..,"body":..}.
import protobuf from 'protobufjs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const [url, mode, service, token] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const protoRoot = path.join(here, '..', '..', 'src', 'format', 'proto');
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(protoRoot, target);
root.loadSync(['profile.proto', 'push/v1/push.proto']);
const Profile = root.lookupType('perftools.profiles.Profile');
const PushRequest = root.lookupType('push.v1.PushRequest');

const strings = ['', 'cpu', 'nanoseconds', 'main', 'work', 'idle'];
const profile = Profile.create({
	sampleType: [{ type: 1, unit: 2 }],
	periodType: { type: 1, unit: 2 },
	period: 10000000,
	timeNanos: Date.now() * 1e6,
	durationNanos: 10e9,
	function: [
		{ id: 1, name: 3 },
		{ id: 2, name: 4 },
		{ id: 3, name: 5 },
	],
	location: [
		{ id: 1, line: [{ functionId: 1 }] },
		{ id: 2, line: [{ functionId: 2 }] },
		{ id: 3, line: [{ functionId: 3 }] },
	],
	sample: [
		{ locationId: [2, 1], value: [70] },
		{ locationId: [3, 1], value: [30] },
	],
	stringTable: strings.map((s) => Buffer.from(s)), // bytes in profile.proto
});
const raw = zlib.gzipSync(Profile.encode(profile).finish());
const req = PushRequest.create({
	series: [
		{
			labels: [
				{ name: '__name__', value: 'process_cpu' },
				{ name: 'service_name', value: service },
				{ name: 'env', value: 'connect' },
			],
			samples: [{ rawProfile: raw, ID: '6b3c7a3e-7d1f-4b61-9a55-2a4e0d7f3a10' }],
		},
	],
});
const err = PushRequest.verify(req);
if (err) throw new Error(err);

let body, ctype;
if (mode === 'json') {
	body = JSON.stringify(PushRequest.toObject(req, { bytes: String, json: true }));
	ctype = 'application/json';
} else {
	body = PushRequest.encode(req).finish();
	ctype = 'application/proto';
}
const headers = { 'Content-Type': ctype, 'Connect-Protocol-Version': '1' };
if (token) headers.Authorization = `Bearer ${token}`;
const res = await fetch(`${url}/push.v1.PusherService/Push`, { method: 'POST', headers, body });
const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
console.log(JSON.stringify({ status: res.status, contentType: res.headers.get('content-type'), body: text, sent: mode === 'json' ? body.slice(0, 120) : body.length }));
