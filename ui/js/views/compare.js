// SPDX-License-Identifier: Apache-2.0
/*
 * compare.js - the compare view: a differential flame graph of two
 * selections (/api/v1/diff), A the baseline and B the comparison, each
 * with its own type, selector, range and chart.
 *
 * Default sides split the range where the data is (timesplit.js), so
 * neither side is empty when the range holds data at two moments; a
 * side that is empty all the same is said in words above the graph. A
 * time typed into a side is checked: "from" after "to" is refused with
 * a message and the typed text stays for correcting, never reverted.
 */
import { Slot, api } from '../api.js';
import { mix } from '../color.js';
import { actions, pub } from '../ctx.js';
import { busy, cssVar, el, hideMsg, showMsg, $ } from '../dom.js';
import { FlameGraph } from '../flamegraph.js';
import { escapeHtml, fmtCount, fmtPct, fmtRange, fmtTime, fmtValue, parseTime, parseType } from '../format.js';
import { filterParams, rangeMs, state } from '../state.js';
import { halves, splitByMass } from '../timesplit.js';
import { prepare, walk } from '../tree.js';
import { drawChart } from './chart.js';
import { openFrameMenu } from './menu.js';

const slot = new Slot();
const chartSlots = { a: new Slot(), b: new Slot() };
const viewNode = $('view-compare');
const SIDES = ['a', 'b'];
const sideRoot = (side) => document.querySelector(`.cmp-side[data-side="${side}"]`);

function diffFill(n) {
	const dark = document.documentElement.dataset.theme === 'dark';
	const strong = dark || n.intensity > 0.6 ? '#ffffff' : undefined;
	if (n.diffClass === 'more') return { fill: mix(cssVar('--diff-same'), cssVar('--diff-more'), n.intensity), text: strong };
	if (n.diffClass === 'less') return { fill: mix(cssVar('--diff-same'), cssVar('--diff-less'), n.intensity), text: strong };
	return { fill: cssVar('--diff-same') || '#d5d8dd', text: dark ? '#e3e7ed' : undefined };
}

export const diffView = new FlameGraph($('diffgraph'), $('diff-wrap').querySelector('.overlay'), {
	flipped: () => !state.icicle,
	fill: diffFill,
	rootLabel: () => 'total',
	tooltip: (n) => diffTooltip(n),
	onMenu: (n, ev, g) => openFrameMenu(n, ev, g, {}),
	extra: (n) => ({ diffClass: n.diffClass, delta: n.delta, noise: n.noise, status: n.status }),
});
export const compare = { state: 'idle', graph: diffView.model, mode: 'normalized', charts: {}, uplots: {}, sides: null };
pub.views.compare = compare;

function diffTooltip(n) {
	const d = compare.data;
	const u = d.unit;
	const norm = d.mode === 'normalized';
	const change = norm ? `${n.delta >= 0 ? '+' : ''}${(100 * n.delta).toFixed(2)} pp of total` : `${n.delta >= 0 ? '+' : ''}${fmtValue(n.delta, u)}`;
	const verdict = n.status === 'appeared' ? 'only in B' : n.status === 'disappeared' ? 'only in A' : n.noise ? 'within sampling noise' : n.delta > 0 ? 'more in B' : 'less in B';
	return `<div class="tt-name">${escapeHtml(n.parent ? n.name : 'total')}</div><table>` +
		`<tr><td class="k">A total</td><td class="v">${escapeHtml(fmtValue(n.a_total, u))}</td><td class="p">${fmtPct(n.a_share, 1)}</td></tr>` +
		`<tr><td class="k">B total</td><td class="v">${escapeHtml(fmtValue(n.b_total, u))}</td><td class="p">${fmtPct(n.b_share, 1)}</td></tr>` +
		`<tr><td class="k">Change</td><td class="v" colspan="2">${escapeHtml(change)}</td></tr>` +
		(n.a_rate !== undefined
			? `<tr><td class="k">Per second</td><td class="v" colspan="2">${escapeHtml(`${fmtValue(n.a_rate, u)}/s \u2192 ${fmtValue(n.b_rate, u)}/s (rate q = ${qText(n.rate_q)})`)}</td></tr>`
			: '') +
		`<tr><td class="k">Verdict</td><td class="v" colspan="2">${escapeHtml(verdict)} (z = ${(+n.z || 0).toFixed(2)}, q = ${qText(norm ? n.share_q : n.rate_q)}, BH-adjusted)</td></tr></table>`;
}

/* A Benjamini-Hochberg q-value for the tooltip: two significant digits. */
function qText(q) {
	return q === undefined ? '?' : (+q).toPrecision(2);
}

export function sidesSet() {
	const c = state.cmp;
	return !!(c.aFrom && c.aTo && c.bFrom && c.bTo);
}

/*
 * Default sides when none are set: split the range where the selection
 * has data (the series of the range), else its two halves.
 */
export async function defaultSides(signal) {
	const c = state.cmp;
	if (!c.aType) c.aType = state.type;
	if (!c.bType) c.bType = state.type;
	if (sidesSet()) return 'set';
	const [from, to] = rangeMs();
	let sides = null;
	try {
		const step = Math.max(1000, Math.round((to - from) / 240 / 1000) * 1000);
		const s = await api('api/v1/series', { dataset: state.dataset, type: c.aType, query: c.aQuery || state.query, from: String(from), to: String(to), step: `${step / 1000}s` }, signal);
		const vals = (s.series && s.series[0] && s.series[0].values) || [];
		sides = splitByMass(s.timestamps || [], vals, s.step_ms || step, from, to);
	} catch (e) {
		if (e.aborted) throw e;
		sides = null;
	}
	const how = sides ? 'data' : 'halves';
	Object.assign(c, sides || halves(from, to));
	compare.defaults = how;
	return how;
}

/* Fills the inputs from the state (the fields being edited are left alone when @keepTyped). */
export function fillCompareInputs() {
	const c = state.cmp;
	for (const side of SIDES) {
		const root = sideRoot(side);
		const sel = root.querySelector('.cmp-type');
		if (sel.options.length !== el.type.options.length) sel.innerHTML = el.type.innerHTML;
		sel.value = c[`${side}Type`];
		if (sel.value !== c[`${side}Type`]) {
			const o = document.createElement('option');
			o.value = o.textContent = c[`${side}Type`];
			sel.appendChild(o);
			sel.value = c[`${side}Type`];
		}
		root.querySelector('.cmp-query').value = c[`${side}Query`];
		for (const k of ['from', 'to']) {
			const inp = root.querySelector(`.cmp-${k}`);
			inp.value = c[`${side}${k === 'from' ? 'From' : 'To'}`] ? fmtTime(c[`${side}${k === 'from' ? 'From' : 'To'}`]) : '';
			inp.removeAttribute('aria-invalid');
		}
	}
	for (const r of document.querySelectorAll('input[name="cmp-mode"]')) r.checked = r.value === c.mode;
}

/*
 * Reads the inputs into the state. Returns null, or the words of what is
 * wrong (a time that does not parse, "from" not before "to"): then
 * nothing of that side's range is taken and the inputs keep what was typed.
 */
export function readCompareInputs() {
	const c = state.cmp;
	const problems = [];
	for (const side of SIDES) {
		const root = sideRoot(side);
		c[`${side}Type`] = root.querySelector('.cmp-type').value;
		c[`${side}Query`] = root.querySelector('.cmp-query').value.trim();
		const fi = root.querySelector('.cmp-from');
		const ti = root.querySelector('.cmp-to');
		const f = parseTime(fi.value);
		const t = parseTime(ti.value);
		fi.removeAttribute('aria-invalid');
		ti.removeAttribute('aria-invalid');
		const S = side.toUpperCase();
		if (!Number.isFinite(f) || !Number.isFinite(t)) {
			(Number.isFinite(f) ? ti : fi).setAttribute('aria-invalid', 'true');
			problems.push(`${S}'s ${Number.isFinite(f) ? '"to"' : '"from"'} is not a time: write it as ${fmtTime(Date.now())}.`);
			continue;
		}
		if (!(t > f)) {
			fi.setAttribute('aria-invalid', 'true');
			ti.setAttribute('aria-invalid', 'true');
			problems.push(`${S}'s "from" (${fmtTime(f)}) must be before its "to" (${fmtTime(t)}).`);
			continue;
		}
		/* keep milliseconds the inputs do not show */
		if (Math.floor(c[`${side}From`] / 1000) !== Math.floor(f / 1000)) c[`${side}From`] = f;
		if (Math.floor(c[`${side}To`] / 1000) !== Math.floor(t / 1000)) c[`${side}To`] = t;
	}
	const m = document.querySelector('input[name="cmp-mode"]:checked');
	c.mode = m ? m.value : 'normalized';
	return problems.length ? problems.join(' ') : null;
}

/* Shows @words as the reason the comparison was not run. */
export function refuseCompare(words) {
	compare.state = 'error';
	compare.refused = words;
	showMsg(el.cmpMsg, 'error', 'These ranges cannot be compared', escapeHtml(words));
}

export function sideParams(side) {
	const c = state.cmp;
	return { type: c[`${side}Type`] || state.type, query: c[`${side}Query`] || state.query, from: String(c[`${side}From`]), to: String(c[`${side}To`]) };
}

/* /api/v1/diff's parameters for sides @a and @b (sideParams), with the view filters. */
export function diffParams(a, b) {
	return {
		dataset: state.dataset,
		type: a.type,
		a_type: a.type,
		b_type: b.type,
		a_query: a.query,
		b_query: b.query,
		a_from: a.from,
		a_to: a.to,
		b_from: b.from,
		b_to: b.to,
		mode: state.cmp.mode,
		max_nodes: 8192,
		...filterParams(),
	};
}

function failView(kind, title, detail) {
	diffView.clear();
	compare.state = kind;
	el.cmpSummary.textContent = '';
	showMsg(el.cmpMsg, kind, title, detail);
}

export async function loadCompare() {
	const t = slot.begin();
	compare.state = 'loading';
	compare.refused = null;
	busy(viewNode, true);
	if (!diffView.root) showMsg(el.cmpMsg, 'loading', 'Comparing…', '');
	try {
		await defaultSides(t.signal);
	} catch (e) {
		return;
	}
	if (!t.current) return;
	fillCompareInputs();
	actions.writeUrl();
	const a = sideParams('a');
	const b = sideParams('b');
	for (const side of SIDES) sideChart(side, side === 'a' ? a : b);
	const ta = parseType(a.type);
	const tb = parseType(b.type);
	if (ta.unit && tb.unit && ta.unit !== tb.unit) {
		busy(viewNode, false);
		failView('error', 'These two sides cannot be compared',
			`A is ${escapeHtml(ta.label)}, measured in ${escapeHtml(ta.unit)}; B is ${escapeHtml(tb.label)}, measured in ${escapeHtml(tb.unit)}. Pick the same profile type on both sides.`);
		return;
	}
	let data;
	try {
		data = await t.get('api/v1/diff', diffParams(a, b));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		failView('error', 'Could not compare', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	compare.data = data;
	compare.mode = data.mode;
	compare.sides = { a, b };
	const norm = data.mode === 'normalized';
	/* width: both sides together; colour: the sign and size of delta, grey when within noise */
	let maxAbs = 0;
	for (const n of walk(data.root)) {
		n.children = n.children || [];
		n.self = norm ? (data.a.total ? n.a_self / data.a.total : 0) + (data.b.total ? n.b_self / data.b.total : 0) : n.a_self + n.b_self;
		n.total = norm ? n.a_share + n.b_share : n.a_total + n.b_total;
		if (n !== data.root) maxAbs = Math.max(maxAbs, Math.abs(n.delta));
	}
	prepare(data.root);
	for (const n of walk(data.root)) {
		if (n.status === 'appeared') n.diffClass = 'more';
		else if (n.status === 'disappeared') n.diffClass = 'less';
		else if (n.noise || !n.delta) n.diffClass = 'same';
		else n.diffClass = n.delta > 0 ? 'more' : 'less';
		n.intensity = n.status !== 'both' ? 1 : maxAbs ? Math.abs(n.delta) / maxAbs : 0;
	}
	if (!data.a.total && !data.b.total) {
		failView('empty', 'Both sides are empty', 'Neither time range has samples for these selections. Drag on the charts above to pick ranges with data.');
		return;
	}
	hideMsg(el.cmpMsg);
	diffView.setData(data.root, data.unit);
	diffView.render();
	const u = data.unit;
	const empty = !data.a.total ? 'A' : !data.b.total ? 'B' : '';
	compare.emptySide = empty;
	const warn = empty
		? `<div class="cmp-warn" data-testid="cmp-warn"><strong>${empty} has no samples in its range</strong>: every frame shows as ${empty === 'A' ? 'appeared (red)' : 'disappeared (green)'}. Drag on ${empty}'s chart above to pick a range with data.</div>`
		: '';
	el.cmpSummary.innerHTML = warn + `<span>A: ${escapeHtml(fmtValue(data.a.total, u))} in ${fmtCount(data.a.samples)} samples (${escapeHtml(fmtRange(+a.from, +a.to))}) · ` +
		`B: ${escapeHtml(fmtValue(data.b.total, u))} in ${fmtCount(data.b.samples)} samples (${escapeHtml(fmtRange(+b.from, +b.to))}) · ` +
		`${norm ? 'shares of each side' : 'absolute values'}; noise test: ${escapeHtml(data.noise_test || '')}</span>`;
	compare.state = 'ready';
}

/* A side's chart: the side's total over a window around both sides, its range shaded. */
export async function sideChart(side, p) {
	const node = sideRoot(side).querySelector('.cmp-chart');
	const c = state.cmp;
	const from = Math.min(c.aFrom, c.bFrom);
	const to = Math.max(c.aTo, c.bTo);
	const pad = Math.round((to - from) * 0.1);
	const t = chartSlots[side].begin();
	let data;
	try {
		data = await t.get('api/v1/series', { dataset: state.dataset, type: p.type, query: p.query, from: String(from - pad), to: String(to + pad) });
	} catch (e) {
		if (e.aborted || !t.current) return;
		node.innerHTML = `<div class="message visible error"><span>${escapeHtml(e.message)}</span></div>`;
		return;
	}
	if (!t.current) return;
	compare.charts[side] = data;
	const band = side === 'a' ? { fill: 'rgba(120,130,145,0.22)', edge: '#7d8796' } : { fill: 'rgba(47,111,222,0.18)', edge: '#2f6fde' };
	band.from = +p.from;
	band.to = +p.to;
	compare.uplots[side] = drawChart(node, data, 130, (a, b) => {
		state.cmp[`${side}From`] = a;
		state.cmp[`${side}To`] = b;
		actions.writeUrl();
		actions.rerunView();
	}, compare.uplots[side], band);
}

export function redrawCompare() {
	if (diffView.root) diffView.render();
	for (const side of SIDES) if (compare.charts[side]) sideChart(side, sideParams(side));
}

function edited() {
	const bad = readCompareInputs();
	if (bad) {
		refuseCompare(bad);
		return;
	}
	actions.rerunView();
}
el.cmpRun.addEventListener('click', edited);
for (const r of document.querySelectorAll('input[name="cmp-mode"]')) r.addEventListener('change', edited);
for (const s of document.querySelectorAll('.cmp-type, .cmp-from, .cmp-to')) s.addEventListener('change', edited);
for (const s of document.querySelectorAll('.cmp-query, .cmp-from, .cmp-to'))
	s.addEventListener('keydown', (ev) => {
		if (ev.key === 'Enter') {
			ev.preventDefault();
			edited();
		}
	});
