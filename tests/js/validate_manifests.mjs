// SPDX-License-Identifier: Apache-2.0
// validate_manifests.mjs - offline checks of deploy/ (tests/integration/
// test_deploy_manifests.sh):
//   1. each kustomization (deploy/base, deploy/overlays/*) is built the way
//      kustomize does for the features deploy/ uses (resources: files and
//      directories with a kustomization.yaml; patches: JSON 6902 with a
//      kind/name target), and every object is validated against the
//      Kubernetes API schema of the kubernetes-models package (pinned in
//      package.json; JSON schemas generated from the Kubernetes OpenAPI
//      spec: types, required fields, enums);
//   2. a policy: the agent's DaemonSet drops every capability, adds only
//      ones each named with a reason in the file's header comment, is not
//      privileged and uses hostPID; server and forwarder run as non-root
//      with no capability added and no host namespace.
// Prints one line per object and check; exit 1 on the first failure list.
//
//   node validate_manifests.mjs DEPLOY_DIR
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

const root = process.argv[2];
const problems = [];
const say = (s) => console.log(s);

function loadDocs(file) {
	return YAML.parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => {
		if (d.errors.length)
			throw new Error(`${file}: ${d.errors[0].message}`);
		return d.toJS();
	}).filter((o) => o);
}

// JSON pointer (RFC 6901) parent and key
function walk(obj, ptr) {
	const parts = ptr.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
	const key = parts.pop();
	let cur = obj;
	for (const p of parts) {
		if (cur == null || !(p in cur))
			throw new Error(`patch path ${ptr}: ${p} not found`);
		cur = cur[p];
	}
	return [cur, key];
}

function applyPatch(obj, ops) {
	for (const op of ops) {
		const [parent, key] = walk(obj, op.path);
		const idx = Array.isArray(parent) ? (key === '-' ? parent.length : Number(key)) : key;
		if (op.op === 'replace') {
			if (!(idx in parent))
				throw new Error(`patch replace ${op.path}: nothing there`);
			parent[idx] = op.value;
		} else if (op.op === 'add') {
			if (Array.isArray(parent))
				parent.splice(idx, 0, op.value);
			else
				parent[idx] = op.value;
		} else if (op.op === 'remove') {
			if (Array.isArray(parent))
				parent.splice(idx, 1);
			else
				delete parent[idx];
		} else {
			throw new Error(`patch op ${op.op} is not supported here`);
		}
	}
}

function build(dir) {
	const kfile = path.join(dir, 'kustomization.yaml');
	const [k] = loadDocs(kfile);
	let objs = [];
	for (const r of k.resources || []) {
		const p = path.join(dir, r);
		if (fs.statSync(p).isDirectory())
			objs = objs.concat(build(p));
		else
			objs = objs.concat(loadDocs(p).map((o) => ({ ...o, __file: p })));
	}
	for (const pt of k.patches || []) {
		const ops = YAML.parse(pt.patch);
		const hits = objs.filter((o) => o.kind === pt.target.kind && o.metadata.name === pt.target.name);
		if (hits.length !== 1)
			throw new Error(`${kfile}: patch target ${pt.target.kind}/${pt.target.name} matches ${hits.length} objects`);
		applyPatch(hits[0], ops);
	}
	return objs;
}

async function validate(o) {
	const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : [null, o.apiVersion];
	const mod = `kubernetes-models/${group ? group + '/' : ''}${version}/${o.kind}`;
	let Cls;
	try {
		Cls = (await import(mod))[o.kind];
	} catch (e) {
		return `no schema for ${o.apiVersion} ${o.kind} (${e.message.split('\n')[0]})`;
	}
	const { __file, ...body } = o;
	try {
		new Cls(body).validate();
	} catch (e) {
		return e.message;
	}
	return null;
}

const ALLOWED_CAPS = new Set(['BPF', 'PERFMON', 'SYS_PTRACE', 'SYSLOG', 'SYS_RESOURCE']);

function policy(o) {
	const out = [];
	const spec = o.spec && o.spec.template && o.spec.template.spec;
	if (!spec)
		return out;
	const header = fs.readFileSync(o.__file, 'utf8').split('\n').filter((l) => l.startsWith('#')).join('\n');
	for (const c of spec.containers || []) {
		const sc = c.securityContext || {};
		const caps = sc.capabilities || {};
		const add = caps.add || [];
		if (sc.privileged)
			out.push(`${o.kind}/${o.metadata.name}: container ${c.name} is privileged`);
		if (!(caps.drop || []).includes('ALL'))
			out.push(`${o.kind}/${o.metadata.name}: container ${c.name} does not drop ALL capabilities`);
		if (o.kind === 'DaemonSet') {
			if (!spec.hostPID)
				out.push(`DaemonSet/${o.metadata.name}: no hostPID (the agent reads every process)`);
			for (const cap of add) {
				if (!ALLOWED_CAPS.has(cap))
					out.push(`DaemonSet/${o.metadata.name}: capability ${cap} is not one the agent uses`);
				if (!new RegExp(`^#\\s+${cap}\\s+\\S`, 'm').test(header))
					out.push(`DaemonSet/${o.metadata.name}: capability ${cap} has no reason in the header of ${o.__file}`);
			}
		} else {
			if (add.length)
				out.push(`${o.kind}/${o.metadata.name}: adds capabilities ${add}`);
			const psc = spec.securityContext || {};
			if (!psc.runAsNonRoot && !sc.runAsNonRoot)
				out.push(`${o.kind}/${o.metadata.name}: not runAsNonRoot`);
			if (spec.hostPID || spec.hostNetwork || spec.hostIPC)
				out.push(`${o.kind}/${o.metadata.name}: uses a host namespace`);
		}
	}
	return out;
}

const roots = [path.join(root, 'base')].concat(
	fs.readdirSync(path.join(root, 'overlays')).map((d) => path.join(root, 'overlays', d)));
for (const r of roots) {
	let objs;
	try {
		objs = build(r);
	} catch (e) {
		problems.push(`${r}: ${e.message}`);
		continue;
	}
	for (const o of objs) {
		const name = `${path.relative(root, r)}: ${o.kind}/${o.metadata && o.metadata.name}`;
		const err = await validate(o);
		if (err)
			problems.push(`${name}: ${err}`);
		else
			say(`valid ${name}`);
		for (const p of policy(o))
			problems.push(`${path.relative(root, r)}: policy: ${p}`);
	}
	const ds = objs.filter((o) => o.kind === 'DaemonSet');
	for (const d of ds)
		say(`${path.relative(root, r)}: DaemonSet/${d.metadata.name} capabilities ${JSON.stringify(d.spec.template.spec.containers[0].securityContext.capabilities.add)} args ${JSON.stringify(d.spec.template.spec.containers[0].args)}`);
}
for (const p of problems)
	console.log(`problem ${p}`);
process.exit(problems.length ? 1 : 0);
