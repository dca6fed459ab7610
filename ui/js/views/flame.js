// SPDX-License-Identifier: Apache-2.0
/*
 * flame.js - the flame graph view: /api/v1/flamegraph of the selection,
 * search (share of samples through a match), zoom with a breadcrumb,
 * colour by name, package or frame type, the frame menu on right click.
 */
import { Slot } from '../api.js';
import { frameTypeColor } from '../color.js';
import { actions, pub, timings } from '../ctx.js';
import { busy, cssVar, el, hideMsg, showMsg, $ } from '../dom.js';
import { FlameGraph } from '../flamegraph.js';
import { escapeHtml, fmtCount, fmtPct, fmtValue, parseType } from '../format.js';
import { selection, state } from '../state.js';
import { nodeAtPath, pathOf, prepare, walk } from '../tree.js';
import { colorOf, emptyWords, frameTypes, rangeWords, valueTooltip } from './common.js';
import { openFrameMenu } from './menu.js';

export const MAX_NODES = 32768;
const slot = new Slot();
const viewNode = $('view-flame');

export function matches(node) {
	return state.search && node.name.toLowerCase().includes(state.search.toLowerCase());
}

function searchFill(n) {
	if (state.fn && n.name === state.fn) return { fill: colorOf(n.name, n), outline: cssVar('--selected') || '#2f6fde' };
	if (!state.search) return { fill: colorOf(n.name, n) };
	if (matches(n)) return { fill: cssVar('--match') || '#d94fbf' };
	return { fill: cssVar('--frame-dim') || '#e4e6ea', dim: true };
}

export const flame = new FlameGraph(el.canvas, el.overlay, {
	flipped: () => !state.icicle,
	fill: searchFill,
	rootLabel: (n) => `total · ${fmtValue(n.total, flame.unit)}${flame.data && flame.data.aggregation === 'mean' ? ' mean' : ''}`,
	tooltip: (n) => valueTooltip(n.parent ? n.name : 'total (all samples)', n, flame.root.total, flame.unit, flame.focus),
	extra: (n) => ({ match: !!matches(n), selected: !!state.fn && n.name === state.fn }),
	onMenu: (n, ev, g) => openFrameMenu(n, ev, g, { inverted: state.invert }),
	onZoom: (focus) => {
		state.focusPath = focus ? pathOf(focus) : [];
		actions.writeUrl();
		renderBreadcrumb();
		el.reset.disabled = !focus;
	},
});
pub.views.flame = flame.model;

/* The legend of colour-by-frame-type: the types of the flame graph, with their colours. */
function renderFtLegend() {
	const lg = el.ftLegend;
	const d = flame.data;
	if (state.color !== 'frametype' || !d || !d.root) {
		lg.hidden = true;
		flame.model.frameTypes = null;
		return;
	}
	const count = new Map();
	for (const n of walk(d.root)) if (n.parent) count.set(n.frameType, (count.get(n.frameType) || 0) + 1);
	const types = [...count.keys()].sort((a, b) => (a === '') - (b === '') || count.get(b) - count.get(a) || a.localeCompare(b));
	flame.model.frameTypes = types.map((t) => ({ type: t || 'unknown', color: frameTypeColor(t), frames: count.get(t) }));
	lg.innerHTML =
		(Array.isArray(d.frame_types) && d.frame_types.length ? '' : '<span class="ft-none">This profile carries no frame types.</span> ') +
		types
			.map((t) => `<span class="ft-item" data-type="${escapeHtml(t || 'unknown')}"><span class="sw" style="background:${frameTypeColor(t)}"></span>${escapeHtml(t || 'unknown')}</span>`)
			.join('');
	lg.hidden = false;
}

export function renderFlame() {
	if (!flame.root) return;
	renderFtLegend();
	flame.render();
	timings.flameRenderMs.push(flame.model.renderMs);
	renderBreadcrumb();
	renderSearch();
	el.reset.disabled = !flame.focus;
}

function showEmptyOrError(kind, title, detail) {
	flame.clear();
	flame.data = null;
	el.breadcrumb.replaceChildren();
	el.summary.textContent = '';
	el.ftLegend.hidden = true;
	flame.setState(kind);
	showMsg(el.message, kind, title, detail);
}

/* An error of the whole page (the types, the dataset): it replaces the graph. */
export function flameError(title, detail) {
	slot.cancel();
	busy(viewNode, false);
	showEmptyOrError('error', title, detail);
}

export async function loadFlame() {
	const request = selection({ invert: state.invert ? 'true' : '', max_nodes: MAX_NODES });
	const t = slot.begin();
	flame.model.request = request;
	flame.setState('loading');
	busy(viewNode, true);
	if (!flame.root) showMsg(el.message, 'loading', 'Loading the flame graph…', '');
	let data;
	const t0 = performance.now();
	try {
		data = await t.get('api/v1/flamegraph', request);
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		showEmptyOrError('error', 'Could not load the flame graph', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	if (!data || !data.root) data = { unit: '', total: 0, root: { name: 'total', self: 0, total: 0, children: [] } };
	const t1 = performance.now();
	prepare(data.root, data.frame_types);
	const t2 = performance.now();
	frameTypes.byName = new Map();
	if (Array.isArray(data.frame_types)) {
		for (const n of walk(data.root)) if (n.frameType && !frameTypes.byName.has(n.name)) frameTypes.byName.set(n.name, n.frameType);
	}
	data.total = +data.total || data.root.total;
	if (!data.total || !data.root.children.length) {
		const filtered = data.filtered_samples ? ` The view filters removed ${fmtCount(data.filtered_samples)} samples.` : '';
		showEmptyOrError('empty', `No samples in ${rangeWords()}`, emptyWords() + escapeHtml(filtered));
		return;
	}
	flame.setData(data.root, data.unit);
	flame.data = data;
	flame.model.total = data.total;
	flame.model.aggregation = data.aggregation || 'sum';
	flame.focus = (state.focusPath.length && nodeAtPath(data.root, state.focusPath)) || null;
	if (!flame.focus) state.focusPath = [];
	hideMsg(el.message);
	renderFlame();
	renderFlameSummary();
	timings.lastFlame = { nodes: data.root.nodeCount, fetchMs: t1 - t0, prepareMs: t2 - t1, renderMs: flame.model.renderMs, drawn: flame.model.nodes.length };
	flame.setState('ready');
}

function renderFlameSummary() {
	const d = flame.data;
	if (!d) return;
	const t = parseType(state.type);
	const mean = d.aggregation === 'mean' ? ' (mean of the snapshots)' : '';
	const parts = [`${fmtValue(d.total, d.unit)} ${t.sampleType || 'total'}${mean}`, `${fmtCount(d.samples || 0)} samples`, `${fmtCount(d.root.nodeCount - 1)} frames`];
	if (d.truncated && d.truncated.nodes) parts.push(`${fmtCount(d.truncated.nodes)} small frames merged into "other"`);
	if (d.filtered_samples) parts.push(`${fmtCount(d.filtered_samples)} samples filtered out`);
	if (d.unsymbolized) parts.push(`${fmtCount(d.unsymbolized)} unsymbolized`);
	el.summary.textContent = parts.join(' · ');
}

function renderBreadcrumb() {
	const bc = el.breadcrumb;
	bc.replaceChildren();
	if (!flame.root || !flame.root.total) return;
	const chain = [];
	for (let n = flame.focus || flame.root; n; n = n.parent) chain.push(n);
	chain.reverse();
	chain.forEach((n, i) => {
		if (i > 0) {
			const s = document.createElement('span');
			s.className = 'sep';
			s.textContent = '›';
			bc.appendChild(s);
		}
		const label = n === flame.root ? 'total' : n.name;
		if (i === chain.length - 1) {
			const c = document.createElement('span');
			c.className = 'current';
			c.textContent = label;
			c.title = `${label} — ${fmtValue(n.total, flame.unit)} (${fmtPct(n.total, flame.root.total)})`;
			bc.appendChild(c);
		} else {
			const b = document.createElement('button');
			b.type = 'button';
			b.textContent = label;
			b.title = `Zoom out to ${label}`;
			b.addEventListener('click', () => flame.zoom(n === flame.root ? null : n));
			bc.appendChild(b);
		}
	});
}

/* Names matching the search, and the share of samples through a match (nested matches counted once). */
function searchStats() {
	const root = flame.root;
	const names = new Set();
	let sum = 0;
	const stack = [[root, false]];
	while (stack.length) {
		const [node, under] = stack.pop();
		const m = node !== root && matches(node);
		if (m) names.add(node.name);
		if (m && !under) sum += node.total;
		for (const c of node.children) stack.push([c, under || m]);
	}
	return { names, sum };
}

function renderSearch() {
	if (!state.search || !flame.root) {
		el.searchResult.textContent = '';
		return;
	}
	const { names, sum } = searchStats();
	el.searchResult.textContent = names.size
		? `${fmtCount(names.size)} function${names.size > 1 ? 's' : ''} · ${fmtPct(sum, flame.root.total)} of total (${fmtValue(sum, flame.unit)})`
		: 'no matches';
	el.searchResult.dataset.share = String(flame.root.total ? sum / flame.root.total : 0);
	el.searchResult.dataset.matches = String(names.size);
}

/* The heaviest frame matching the search (Enter in the search box opens it in the sandwich). */
export function bestMatch() {
	let best = null;
	if (!flame.root) return null;
	for (const n of walk(flame.root)) if (n.parent && matches(n) && (!best || n.total > best.total)) best = n;
	return best;
}
