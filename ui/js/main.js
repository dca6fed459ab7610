// SPDX-License-Identifier: Apache-2.0
/*
 * main.js - the profd Profiling Explorer: starts the page and ties the
 * query bar, the chart and the views together.
 *
 * One selection (state.js: dataset, profile type, label selector, time
 * range, view filters) drives a time-series chart (uPlot, "sum by" a
 * label) and the views: flame graph, table, sandwich, flame chart,
 * compare (differential flame graph) and stack health. Every number
 * comes from the JSON API of `profd server` (docs/api.md); nothing is
 * recomputed here but layout. The state lives in the URL: a reload, a
 * copied link or Back (after a range change) restores the page.
 *
 * First run: with no profile types yet, the page asks again every few
 * seconds and shows the first data by itself as soon as it arrives.
 *
 * Modules: state.js (state, URL), api.js (client, one request slot per
 * view), format.js / color.js / tree.js / query.js / timesplit.js (pure
 * helpers, unit-tested with node --test), dom.js, flamegraph.js (the
 * canvas flame graph), views/*.js (one per view). No bundler: native ES
 * modules; uPlot (vendor/) is the only library.
 */
import { api } from './api.js';
import { actions, pub } from './ctx.js';
import { clearCssCache, el, hideMsg, hideTooltip, showMsg, toast, $ } from './dom.js';
import { escapeHtml, fmtTime, parseTime, parseType } from './format.js';
import { queryKind } from './query.js';
import { PRESETS, VIEWS, parseTraceIds, searchFromState, selection, state, stateFromSearch, timeParams, traceWindow } from './state.js';
import { chart, loadChart, renderChart } from './views/chart.js';
import { renderChips } from './views/chips.js';
import { compare, diffView, loadCompare, redrawCompare } from './views/compare.js';
import { updateExports } from './views/exports.js';
import { bestMatch, flame, flameError, loadFlame, MAX_NODES, renderFlame } from './views/flame.js';
import { fc, fcReset, arrangeLanes, loadFlamechart, renderFlamechart, FC_TOPS } from './views/flamechart.js';
import { loadHealth } from './views/health.js';
import { drawSparks, fillLabels, loadOverview } from './views/overview.js';
import { closeFrameMenu } from './views/menu.js';
import { loadSandwich, renderSandwich, swCallees, swCallers } from './views/sandwich.js';
import { closeSuggest, labelNames, resetLabelCache, updateSuggest } from './views/suggest.js';
import { loadTable, renderTable, table } from './views/table.js';

window.profd = pub;
window.profdFlame = flame.model;

const TYPES_POLL_MS = 3000;

/* ---------- URL ---------- */

/* Writes the state into the URL; @push: a new history entry (a range change Back undoes). */
function writeUrl(push) {
	const url = `${location.pathname}?${searchFromState()}`;
	if (url !== location.pathname + location.search) {
		if (push) history.pushState(null, '', url);
		else history.replaceState(null, '', url);
	}
	updateExports();
}

/* ---------- profile types ---------- */

let typesTimer = 0;

function idsOf(l) {
	return (Array.isArray(l) ? l : l.types || l.profile_types || []).map((t) => (typeof t === 'string' ? t : t.id || t.name)).filter(Boolean);
}

/* An error of the whole page (the server, the dataset): it replaces the chart and the views. */
function pageError(title, detail) {
	document.body.dataset.failed = '1';
	showMsg($('page-message'), 'error', title, detail);
	flameError(title, detail);
	showMsg(el.chartMsg, 'error', title, '');
	pub.pageError = title;
}

function clearPageError() {
	delete document.body.dataset.failed;
	hideMsg($('page-message'));
	pub.pageError = null;
}

/*
 * Fills the type picker from /api/v1/profile-types. Returns true when
 * there is a type; false, with the reason on the page, when there is
 * none (then it asks again every TYPES_POLL_MS until data arrives and
 * runs the query by itself) or the server cannot say.
 */
async function loadTypes() {
	clearTimeout(typesTimer);
	el.status.textContent = `Server ${location.host}`;
	let ids;
	try {
		const p = state.range === 'abs' ? timeParams() : { from: 'now-7d', to: 'now' };
		ids = idsOf(await api('api/v1/profile-types', { dataset: state.dataset, ...p }));
		/* Nothing in the last 7 days: offer what the server has at all (old
		 * data, a replayed file) rather than claiming it is empty. */
		if (!ids.length && state.range !== 'abs') ids = idsOf(await api('api/v1/profile-types', { dataset: state.dataset, from: '0', to: 'now' }));
	} catch (e) {
		el.type.innerHTML = '<option value="">(unavailable)</option>';
		pageError(state.dataset ? `Could not open the dataset "${state.dataset}"` : 'Could not load the profile types', escapeHtml(e.message));
		return false;
	}
	clearPageError();
	if (state.type && !ids.includes(state.type)) ids.unshift(state.type); /* shared link */
	state.types = ids;
	/* Types that differ only in their period (alloc_objects of a Go heap
	 * profile and of an async-profiler one) say which period they have. */
	const seen = {};
	for (const id of ids) seen[parseType(id).label] = (seen[parseType(id).label] || 0) + 1;
	const optLabel = (id) => {
		const t = parseType(id);
		const per = String(id).split(':').slice(3).filter(Boolean).join(' ');
		return seen[t.label] > 1 ? `${t.label} · ${per ? `per ${per}` : 'no period'}` : t.label;
	};
	el.type.innerHTML = ids.map((id) => `<option value="${escapeHtml(id)}" title="${escapeHtml(id)}">${escapeHtml(optLabel(id))}</option>`).join('');
	if (!ids.length) {
		el.type.innerHTML = '<option value="">No profile types yet</option>';
		pub.waitingForData = true;
		const words = `${state.dataset ? `The dataset "${escapeHtml(state.dataset)}" has` : 'This server has'} no profiles yet. Start an agent with <code>profd agent --server URL</code> or send profiles to this server: this page checks every ${TYPES_POLL_MS / 1000} s and shows the first data by itself.`;
		flame.setState('empty');
		showMsg($('page-message'), 'empty', 'No profiles stored yet', words);
		showMsg(el.message, 'empty', 'No profiles stored yet', words);
		showMsg(el.chartMsg, 'empty', 'No profiles stored yet', 'Waiting for data…');
		typesTimer = setTimeout(async () => {
			if (await loadTypes()) run();
		}, TYPES_POLL_MS);
		return false;
	}
	pub.waitingForData = false;
	if (!state.type) state.type = ids.find((id) => /(^|:)cpu:/.test(id)) || ids[0];
	el.type.value = state.type;
	return true;
}

async function loadGroupBy() {
	const names = await labelNames();
	const cur = state.groupBy;
	const opts = ['', ...names];
	if (cur && !opts.includes(cur)) opts.push(cur);
	el.groupBy.innerHTML = opts.map((n) => `<option value="${escapeHtml(n)}">${n ? escapeHtml(n) : '(nothing)'}</option>`).join('');
	el.groupBy.value = cur;
	const lanes = state.lanes || state.groupBy || 'process.executable.name';
	const lopts = [...new Set([...names, lanes])];
	el.fcLanes.innerHTML = lopts.map((n) => `<option value="${escapeHtml(n)}">${escapeHtml(n)}</option>`).join('');
	el.fcLanes.value = lanes;
	fillLabels(names);
}

/* ---------- views ---------- */

const loaders = { overview: loadOverview, flame: loadFlame, table: loadTable, sandwich: loadSandwich, flamechart: loadFlamechart, compare: loadCompare, health: loadHealth };
const loadedKey = {};

function viewKey(v) {
	const base = JSON.stringify([selection(), state.invert]);
	if (v === 'sandwich') return base + state.fn;
	if (v === 'flamechart') return base + state.lanes;
	if (v === 'overview') return base + state.ovLabel;
	if (v === 'compare') return base + JSON.stringify(state.cmp);
	return base;
}

function loadView(v) {
	const key = viewKey(v);
	if (loadedKey[v] === key) return Promise.resolve();
	loadedKey[v] = key;
	return loaders[v]().then(() => {
		/* compare fills its default sides while loading */
		if (loadedKey[v] === key) loadedKey[v] = viewKey(v);
	});
}

function showTabs(v) {
	for (const b of el.tabs.querySelectorAll('button')) {
		const on = b.dataset.view === v;
		b.classList.toggle('active', on);
		b.setAttribute('aria-selected', on ? 'true' : 'false');
	}
	for (const s of document.querySelectorAll('.view')) s.hidden = s.dataset.view !== v;
	document.body.dataset.view = v;
}

function setView(v) {
	state.view = v;
	showTabs(v);
	writeUrl();
	hideTooltip();
	closeFrameMenu();
	return loadView(v).then(() => {
		/* a view drawn while hidden has the wrong width */
		if (v === 'flame' && flame.root) renderFlame();
		if (v === 'sandwich') renderSandwich();
		if (v === 'compare' && diffView.root) diffView.render();
		if (v === 'flamechart' && fc.data) renderFlamechart();
	});
}

function forget() {
	for (const k of Object.keys(loadedKey)) delete loadedKey[k];
}

function rerunView() {
	forget();
	writeUrl();
	return loadView(state.view);
}

function rerunAll(push) {
	forget();
	writeUrl(push);
	return Promise.all([loadChart(), loadView(state.view)]);
}

function filtersChanged() {
	renderChips();
	return rerunAll();
}

function readForm() {
	state.dataset = el.dataset.value.trim();
	state.type = el.type.value;
	const q = el.query.value.trim();
	/* a bare word is a search (suggest.js), not a selector */
	if (queryKind(q) !== 'word') state.query = q;
	const ids = parseTraceIds(el.trace.value, el.span.value);
	if (ids.error) {
		toast(ids.error);
	} else {
		state.trace = ids.trace;
		state.span = ids.span;
	}
	state.groupBy = el.groupBy.value;
	if (el.range.value === 'abs') {
		const f = parseTime(el.from.value);
		const t = parseTime(el.to.value);
		if (f && t > f) {
			if (Math.floor(state.from / 1000) !== Math.floor(f / 1000)) state.from = f;
			if (Math.floor(state.to / 1000) !== Math.floor(t / 1000)) state.to = t;
			state.range = 'abs';
		}
	} else {
		state.range = el.range.value;
	}
}

function fillForm() {
	el.dataset.value = state.dataset;
	el.query.value = state.query;
	el.trace.value = state.trace;
	el.span.value = state.span;
	el.range.value = state.range;
	el.absRange.hidden = state.range !== 'abs';
	if (state.range === 'abs') {
		el.from.value = fmtTime(state.from);
		el.to.value = fmtTime(state.to);
	}
	el.search.value = state.search;
	el.invert.checked = state.invert;
	el.icicle.checked = state.icicle;
	el.color.value = state.color;
	el.tableSearch.value = state.tableSearch;
	el.fcTop.value = String(state.fcTop);
	if (state.groupBy && ![...el.groupBy.options].some((o) => o.value === state.groupBy)) {
		const o = document.createElement('option');
		o.value = o.textContent = state.groupBy;
		el.groupBy.appendChild(o);
	}
	el.groupBy.value = state.groupBy;
	renderChips();
}

let running = 0;

async function run(push) {
	closeSuggest();
	const oldType = state.type;
	const oldDataset = state.dataset;
	const oldRange = JSON.stringify([state.range, state.from, state.to]);
	const word = queryKind(el.query.value) === 'word';
	readForm();
	if (word) {
		/* show what the word names; the selection stays as it was */
		el.query.focus();
		updateSuggest(true);
		if (flame.root || state.types.length) return;
	}
	if (state.dataset !== oldDataset || !state.types.length) {
		/* another dataset has its own types and labels */
		if (state.dataset !== oldDataset) state.type = '';
		resetLabelCache();
		if (!(await loadTypes())) return;
		state.type = el.type.value;
	}
	if (state.type !== oldType) {
		state.focusPath = [];
		state.cmp.aType = state.cmp.bType = '';
	}
	if (!state.type) return;
	const rangeChanged = push || oldRange !== JSON.stringify([state.range, state.from, state.to]);
	if (rangeChanged) state.cmp.aFrom = state.cmp.aTo = state.cmp.bFrom = state.cmp.bTo = 0;
	flame.model.request = selection({ invert: state.invert ? 'true' : '', max_nodes: MAX_NODES });
	if (state.view === 'flame') flame.setState('loading');
	const me = ++running;
	el.run.disabled = true;
	try {
		await Promise.all([rerunAll(rangeChanged), loadGroupBy()]);
	} finally {
		if (me === running) el.run.disabled = false;
	}
}

function setAbsRange(a, b) {
	if (!(b > a)) return;
	state.range = 'abs';
	state.from = a;
	state.to = b;
	fillForm();
	run(true);
}

function selectFunction(name, openSandwich) {
	state.fn = name;
	if (openSandwich) setView('sandwich');
	else writeUrl();
	if (flame.root) renderFlame();
	if (table.rows.length) renderTable();
}

Object.assign(actions, { setView, rerunView, rerunAll, run, writeUrl, selectFunction, setAbsRange, filtersChanged });

/* ---------- controls ---------- */

el.form.addEventListener('submit', (ev) => {
	ev.preventDefault();
	run();
});
el.refresh.addEventListener('click', () => run());
/* From a trace or span to its own window: the flame graph and flame chart of just that time. */
el.traceWindow.addEventListener('click', async () => {
	readForm();
	if (!state.trace && !state.span) {
		toast('Enter a trace or span ID first');
		return;
	}
	let data;
	try {
		data = await api('api/v1/flamechart', selection({ group_by: 'thread.name', max_spans: 200000 }));
	} catch (e) {
		toast(`Could not find the trace's samples: ${e.message}`);
		return;
	}
	const w = traceWindow(data);
	if (!w) {
		toast('No samples of this trace in the time range');
		return;
	}
	setAbsRange(w[0], w[1]);
});
el.type.addEventListener('change', () => run());
el.groupBy.addEventListener('change', () => run());
el.range.addEventListener('change', () => {
	if (el.range.value === 'abs') {
		if (state.range !== 'abs') {
			state.to = Date.now();
			state.from = state.to - (PRESETS[state.range] ? PRESETS[state.range][1] : 3600e3);
		}
		el.absRange.hidden = false;
		el.from.value = fmtTime(state.from);
		el.to.value = fmtTime(state.to);
		state.range = 'abs';
		return;
	}
	el.absRange.hidden = true;
	run(true);
});
for (const i of [el.from, el.to]) {
	i.addEventListener('change', () => {
		const f = parseTime(el.from.value);
		const t = parseTime(el.to.value);
		const bad = !Number.isFinite(f) || !Number.isFinite(t) || !(t > f);
		el.from.toggleAttribute('aria-invalid', bad);
		el.to.toggleAttribute('aria-invalid', bad);
		if (bad) {
			toast(!Number.isFinite(f) || !Number.isFinite(t) ? `Write times as ${fmtTime(Date.now())}` : '"From" must be before "to".');
			return;
		}
		run();
	});
}
el.reset.addEventListener('click', () => flame.zoom(null));
el.tabs.addEventListener('click', (ev) => {
	const b = ev.target.closest('button[data-view]');
	if (b) setView(b.dataset.view);
});
el.invert.addEventListener('change', () => {
	state.invert = el.invert.checked;
	state.focusPath = [];
	rerunView();
});
el.icicle.addEventListener('change', () => {
	state.icicle = el.icicle.checked;
	writeUrl();
	if (flame.root) renderFlame();
	if (diffView.root) diffView.render();
});
el.color.addEventListener('change', () => {
	state.color = el.color.value;
	writeUrl();
	redrawAll();
});
el.topTable.tHead.addEventListener('click', (ev) => {
	const th = ev.target.closest('th.sortable');
	if (!th) return;
	state.sort = th.dataset.sort;
	writeUrl();
	renderTable();
});
el.topTable.tBodies[0].addEventListener('click', (ev) => {
	const tr = ev.target.closest('tr[data-name]');
	if (tr) selectFunction(tr.dataset.name, true);
});
el.tableSearch.addEventListener('input', () => {
	state.tableSearch = el.tableSearch.value.trim();
	writeUrl();
	renderTable();
});
el.swFn.addEventListener('change', () => {
	const v = el.swFn.value.trim();
	if (v !== state.fn) selectFunction(v, false);
	loadView('sandwich');
});
el.search.addEventListener('input', () => {
	state.search = el.search.value.trim();
	writeUrl();
	if (flame.root && flame.root.total) renderFlame();
});
el.search.addEventListener('keydown', (ev) => {
	if (ev.key !== 'Enter' || !state.search || !flame.root) return;
	ev.preventDefault();
	/* open the heaviest matching function in the sandwich */
	const best = bestMatch();
	if (best) selectFunction(best.name, true);
});
el.fcLanes.addEventListener('change', () => {
	state.lanes = el.fcLanes.value;
	writeUrl();
	loadView('flamechart');
});
el.fcTop.addEventListener('change', () => {
	state.fcTop = +el.fcTop.value || 0;
	writeUrl();
	arrangeLanes();
	renderFlamechart();
});

el.copyLink.addEventListener('click', async () => {
	writeUrl();
	const link = location.href;
	pub.copiedLink = link;
	try {
		await navigator.clipboard.writeText(link);
		toast('Link copied: it restores this page as you see it.');
	} catch (e) {
		window.prompt('Copy this link:', link);
	}
});

function applyTheme(t) {
	document.documentElement.dataset.theme = t;
	clearCssCache();
	el.theme.textContent = t === 'dark' ? 'Light theme' : 'Dark theme';
	try {
		localStorage.setItem('profd-theme', t);
	} catch (e) {
		/* private mode: the choice lasts this page */
	}
}
el.theme.addEventListener('click', () => {
	applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
	redrawAll();
});

function redrawAll() {
	if (flame.root && state.view === 'flame') renderFlame();
	for (const f of [swCallers, swCallees, diffView]) if (f.root && !f.canvas.closest('.view').hidden) f.render();
	if (fc.data && state.view === 'flamechart') renderFlamechart();
	if (state.view === 'overview') drawSparks();
	if (chart.data && chart.data.samples) renderChart();
	if (state.view === 'compare' && compare.data) redrawCompare();
}

document.addEventListener('keydown', (ev) => {
	const t = ev.target;
	const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
	if (ev.key === 'Escape') {
		closeFrameMenu();
		if (t === el.search && el.search.value) {
			el.search.value = '';
			el.search.dispatchEvent(new Event('input'));
		} else if (state.view === 'flame' && flame.focus) {
			flame.zoom(null);
		} else if (state.view === 'flamechart' && fc.extent) {
			fcReset();
		}
		return;
	}
	if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
	if (ev.key === '/') {
		ev.preventDefault();
		if (state.view === 'table') el.tableSearch.focus();
		else {
			if (state.view !== 'flame') setView('flame');
			el.search.focus();
		}
	} else if (ev.key >= '0' && ev.key <= String(VIEWS.length - 1)) {
		setView(VIEWS[+ev.key]); /* 0: the overview, 1-6 the views */
	} else if (ev.key === 'u' || ev.key === 'Backspace') {
		/* zoom out one level */
		if (state.view === 'flame' && flame.focus) flame.zoom(flame.focus.parent);
	}
});

let resizePending = false;
window.addEventListener('resize', () => {
	if (resizePending) return;
	resizePending = true;
	requestAnimationFrame(() => {
		resizePending = false;
		redrawAll();
	});
});

/* Back / Forward: the state of that entry (a range change pushed one). */
window.addEventListener('popstate', () => {
	stateFromSearch(location.search);
	fillForm();
	el.type.value = state.type;
	showTabs(state.view);
	forget();
	updateExports();
	loadChart();
	loadView(state.view);
});

/* ---------- start ---------- */

async function start() {
	stateFromSearch(location.search);
	applyTheme(document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light');
	el.fcTop.innerHTML = FC_TOPS.map((n) => `<option value="${n}">${n ? `top ${n}` : 'all'}</option>`).join('');
	fillForm();
	showTabs(state.view);
	updateExports();
	if (!(await loadTypes())) return;
	await run();
}

start();
