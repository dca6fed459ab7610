// SPDX-License-Identifier: Apache-2.0
// otlp_grpc_export.mjs - an OTLP/gRPC client that is not profd's own:
// @grpc/grpc-js over h2c, messages built and encoded by protobufjs from
// profd's .proto files (src/format/proto), calling
// ProfilesService/Export. Used by tests/integration/test_ingest_grpc.sh.
//
//   node otlp_grpc_export.mjs HOST:PORT MODE [TOKEN] [DATASET]
//
// MODE: ok (one CPU profile of service "grpc-app": main;work = 70,
// main;idle = 30 at cpu/nanoseconds), gzip (the same with grpc-encoding
// gzip), big (a message of 3 MiB of padding in a string), bad (a stack
// index out of range), unknown (calls a method that does not exist).
// Prints one JSON line: {"code": grpc status, "details": message,
// "response": the decoded ExportProfilesServiceResponse or null}.
import grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const protoRoot = path.join(here, '..', '..', 'src', 'format', 'proto');
const [target, mode = 'ok', token = '', dataset = ''] = process.argv.slice(2);

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(protoRoot, target);
root.loadSync('opentelemetry/proto/collector/profiles/v1development/profiles_service.proto');
const pkg = 'opentelemetry.proto.collector.profiles.v1development';
const Req = root.lookupType(`${pkg}.ExportProfilesServiceRequest`);
const Resp = root.lookupType(`${pkg}.ExportProfilesServiceResponse`);

function request() {
	const strings = ['', 'cpu', 'nanoseconds', 'main', 'work', 'idle', 'service.name',
		'grpc-app', 'padding'];
	const s = (x) => strings.indexOf(x);
	const now = BigInt(Date.now()) * 1000000n;
	const dict = {
		stringTable: strings.map((x) => Buffer.from(x)),
		functionTable: [{}, { nameStrindex: s('main') }, { nameStrindex: s('work') },
			{ nameStrindex: s('idle') }],
		locationTable: [{}, { lines: [{ functionIndex: 1 }] }, { lines: [{ functionIndex: 2 }] },
			{ lines: [{ functionIndex: 3 }] }],
		stackTable: [{}, { locationIndices: [2, 1] },
			{ locationIndices: [mode === 'bad' ? 99 : 3, 1] }],
		mappingTable: [{}],
		linkTable: [{}],
		attributeTable: [{}],
	};
	const attrs = [{ key: 'service.name', value: { stringValue: 'grpc-app' } }];
	if (mode === 'big')
		attrs.push({ key: 'padding', value: { stringValue: 'x'.repeat(3 << 20) } });
	const profile = {
		sampleType: { typeStrindex: s('cpu'), unitStrindex: s('nanoseconds') },
		periodType: { typeStrindex: s('cpu'), unitStrindex: s('nanoseconds') },
		period: 10000000,
		timeUnixNano: now,
		samples: [
			{ stackIndex: 1, values: [70], timestampsUnixNano: [now] },
			{ stackIndex: 2, values: [30], timestampsUnixNano: [now] },
		],
	};
	const msg = Req.fromObject({
		dictionary: dict,
		resourceProfiles: [{ resource: { attributes: attrs },
			scopeProfiles: [{ scope: { name: 'grpc-js-test' }, profiles: [profile] }] }],
	});
	return Buffer.from(Req.encode(msg).finish());
}

const method = mode === 'unknown' ? 'Nope' : 'Export';
const Client = grpc.makeGenericClientConstructor({
	call: {
		path: `/${pkg}.ProfilesService/${method}`,
		requestStream: false,
		responseStream: false,
		requestSerialize: (b) => b,
		requestDeserialize: (b) => b,
		responseSerialize: (b) => b,
		responseDeserialize: (b) => b,
	},
}, 'ProfilesService');
const options = { 'grpc.max_send_message_length': 64 << 20 };
if (mode === 'gzip')
	options['grpc.default_compression_algorithm'] = 2; // gzip
const client = new Client(target, grpc.credentials.createInsecure(), options);
const md = new grpc.Metadata();
if (token)
	md.set('authorization', `Bearer ${token}`);
if (dataset)
	md.set('x-profd-dataset', dataset);
const deadline = new Date(Date.now() + 20000);
client.call(request(), md, { deadline }, (err, resp) => {
	const out = { code: err ? err.code : 0, details: err ? err.details : '', response: null };
	if (!err)
		out.response = Resp.toObject(Resp.decode(resp), { longs: String });
	console.log(JSON.stringify(out));
	client.close();
});
