// SPDX-License-Identifier: Apache-2.0
/*
 * exports.js - the Download links: the selection as pprof, folded, SVG
 * and speedscope; in Compare each side's selection (A the baseline, B
 * the comparison: its type, selector and range, with the view filters)
 * as pprof, folded and SVG, and the diff as the JSON of /api/v1/diff.
 */
import { apiUrl } from '../api.js';
import { pub } from '../ctx.js';
import { el, toast } from '../dom.js';
import { fmtRange, parseType } from '../format.js';
import { filterParams, selection, state } from '../state.js';
import { rangeWords } from './common.js';
import { diffParams, sideParams, sidesSet } from './compare.js';

function fileBase(type) {
	return (parseType(type).name || 'profile').replace(/[^A-Za-z0-9_.-]/g, '_');
}

export function updateExports() {
	const x = el.exports;
	const cmp = state.view === 'compare';
	x.main.hidden = cmp;
	x.cmp.hidden = !cmp;
	if (cmp) {
		if (!sidesSet()) return;
		const sides = { a: sideParams('a'), b: sideParams('b') };
		for (const side of ['a', 'b']) {
			const s = sides[side];
			const p = { dataset: state.dataset, ...s, ...filterParams() };
			const words = `${side === 'a' ? 'A (baseline)' : 'B (comparison)'}: ${parseType(s.type).label} · ${fmtRange(+s.from, +s.to)}`;
			const base = `${fileBase(s.type)}.${side.toUpperCase()}`;
			const links = x.sides[side];
			links.pprof.href = apiUrl('api/v1/export/pprof', p).toString();
			links.folded.href = apiUrl('api/v1/export/folded', p).toString();
			links.svg.href = apiUrl('api/v1/export/svg', { ...p, title: words }).toString();
			links.pprof.download = `${base}.pb.gz`;
			links.folded.download = `${base}.folded.txt`;
			links.svg.download = `${base}.svg`;
			for (const [fmt, a] of Object.entries(links)) a.title = `${words}, as ${fmt === 'svg' ? 'an SVG flame graph' : fmt}`;
		}
		x.diff.href = apiUrl('api/v1/diff', diffParams(sides.a, sides.b)).toString();
		x.diff.download = `${fileBase(sides.a.type)}.diff.json`;
		x.diff.title = 'The comparison: B minus A per frame (/api/v1/diff), as JSON';
		return;
	}
	const p = selection();
	x.pprof.href = apiUrl('api/v1/export/pprof', p).toString();
	x.folded.href = apiUrl('api/v1/export/folded', p).toString();
	x.svg.href = apiUrl('api/v1/export/svg', { ...p, invert: state.invert ? 'true' : '', title: `${parseType(state.type).label} · ${rangeWords()}` }).toString();
	const base = fileBase(state.type);
	x.pprof.download = `${base}.pb.gz`;
	x.folded.download = `${base}.folded.txt`;
	x.svg.download = `${base}.svg`;
}

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one "sampled" profile built from the folded export, frames shared.
 */
export function foldedToSpeedscope(text, unit, name) {
	const frames = [];
	const index = new Map();
	const samples = [];
	const weights = [];
	let total = 0;
	for (const line of text.split('\n')) {
		const sp = line.lastIndexOf(' ');
		if (sp <= 0) continue;
		const v = +line.slice(sp + 1);
		if (!Number.isFinite(v)) continue;
		const stack = line.slice(0, sp).split(';').map((f) => {
			let i = index.get(f);
			if (i === undefined) {
				i = frames.length;
				frames.push({ name: f });
				index.set(f, i);
			}
			return i;
		});
		samples.push(stack);
		weights.push(v);
		total += v;
	}
	const u = { nanoseconds: 'nanoseconds', bytes: 'bytes', microseconds: 'microseconds', milliseconds: 'milliseconds', seconds: 'seconds' }[unit] || 'none';
	return {
		$schema: 'https://www.speedscope.app/file-format-schema.json',
		shared: { frames },
		profiles: [{ type: 'sampled', name, unit: u, startValue: 0, endValue: total, samples, weights }],
		name,
		activeProfileIndex: 0,
		exporter: 'profd explorer',
	};
}

async function exportSpeedscope() {
	try {
		const res = await fetch(apiUrl('api/v1/export/folded', selection()));
		const text = await res.text();
		if (!res.ok) throw new Error(`The server answered ${res.status}: ${text.trim()}`);
		const t = parseType(state.type);
		const doc = foldedToSpeedscope(text, t.unit, `${t.label} · ${rangeWords()}`);
		const blob = new Blob([JSON.stringify(doc)], { type: 'application/json' });
		const a = document.createElement('a');
		a.href = URL.createObjectURL(blob);
		a.download = `${fileBase(state.type)}.speedscope.json`;
		document.body.appendChild(a);
		a.click();
		a.remove();
		setTimeout(() => URL.revokeObjectURL(a.href), 10000);
		pub.lastSpeedscope = doc;
	} catch (e) {
		toast(`Could not export: ${e.message}`);
	}
}
el.exports.speedscope.addEventListener('click', exportSpeedscope);
