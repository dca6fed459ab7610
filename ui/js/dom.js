// SPDX-License-Identifier: Apache-2.0
/*
 * dom.js - the page's elements and the small things every view shows:
 * messages (loading, empty, error), the busy state, the tooltip, the
 * toast, theme colours.
 *
 * Loading and stale states are explicit: busy(view, true) dims what the
 * view shows (the previous answer) under a spinner until the new answer
 * or an error replaces it; an error clears the view it belongs to, so
 * the message sits where the view was, never below an old graph.
 */

export const $ = (id) => document.getElementById(id);

export const el = {
	form: $('query-form'),
	dataset: $('dataset-input'),
	type: $('type-select'),
	query: $('query-input'),
	trace: $('trace-input'),
	span: $('span-input'),
	traceWindow: $('trace-window'),
	suggest: $('suggest'),
	groupBy: $('groupby-select'),
	range: $('range-select'),
	absRange: $('abs-range'),
	from: $('from-input'),
	to: $('to-input'),
	run: $('run-button'),
	refresh: $('refresh-button'),
	status: $('server-status'),
	copyLink: $('copy-link'),
	theme: $('theme-toggle'),
	chart: $('chart'),
	chartMsg: $('chart-message'),
	chartSummary: $('chart-summary'),
	legend: $('legend'),
	chips: $('chips'),
	chipKind: $('chip-kind'),
	chipInput: $('chip-input'),
	chipAdd: $('chip-add'),
	hidePresets: $('hide-presets'),
	fold: $('fold-select'),
	tabs: $('tabs'),
	tooltip: $('tooltip'),
	toast: $('toast'),
	menu: $('frame-menu'),
	fcTop: $('fc-top'),
	/* flame graph */
	canvas: $('flamegraph'),
	overlay: $('flame-overlay'),
	message: $('message'),
	breadcrumb: $('breadcrumb'),
	reset: $('reset-button'),
	summary: $('summary'),
	search: $('search-input'),
	searchResult: $('search-result'),
	invert: $('invert-toggle'),
	icicle: $('icicle-toggle'),
	color: $('color-select'),
	ftLegend: $('ft-legend'),
	/* table */
	topTable: $('top-table'),
	tableSummary: $('table-summary'),
	tableSearch: $('table-search'),
	tableMsg: $('table-message'),
	/* sandwich */
	swFn: $('sandwich-fn'),
	fnList: $('fn-list'),
	swSummary: $('sandwich-summary'),
	swMsg: $('sandwich-message'),
	/* flame chart */
	fcCanvas: $('flamechart'),
	fcWrap: $('fc-wrap'),
	fcLanes: $('fc-lanes'),
	fcReset: $('fc-reset'),
	fcSummary: $('fc-summary'),
	fcMsg: $('fc-message'),
	/* compare */
	cmpRun: $('cmp-run'),
	cmpSummary: $('cmp-summary'),
	cmpMsg: $('cmp-message'),
	/* health */
	healthSummary: $('health-summary'),
	healthCards: $('health-cards'),
	healthTable: $('health-table'),
	healthMsg: $('health-message'),
	exports: {
		main: $('exports'),
		pprof: $('export-pprof'),
		svg: $('export-svg'),
		folded: $('export-folded'),
		speedscope: $('export-speedscope'),
		cmp: $('cmp-exports'),
		sides: {
			a: { pprof: $('cmp-export-a-pprof'), folded: $('cmp-export-a-folded'), svg: $('cmp-export-a-svg') },
			b: { pprof: $('cmp-export-b-pprof'), folded: $('cmp-export-b-folded'), svg: $('cmp-export-b-svg') },
		},
		diff: $('cmp-export-diff'),
	},
};

/* @kind: 'loading', 'empty' or 'error'; @detail is HTML (escape what came from outside). */
export function showMsg(node, kind, title, detail) {
	node.classList.remove('loading', 'error', 'empty');
	node.classList.add('message', 'visible', kind);
	const t = document.createElement('strong');
	t.textContent = title;
	node.replaceChildren(t);
	if (detail) {
		const d = document.createElement('span');
		d.innerHTML = detail;
		node.appendChild(d);
	}
}

export function hideMsg(node) {
	node.classList.remove('visible', 'loading', 'error', 'empty');
	node.replaceChildren();
}

/*
 * The busy state of a view (or panel) @node: its content dims and a
 * spinner shows while a request for it is in flight (data-busy="1");
 * tests read the attribute.
 */
export function busy(node, on) {
	if (on) node.dataset.busy = '1';
	else delete node.dataset.busy;
}

let toastTimer = 0;
export function toast(text) {
	el.toast.textContent = text;
	el.toast.hidden = false;
	clearTimeout(toastTimer);
	toastTimer = setTimeout(() => (el.toast.hidden = true), 2500);
}

export function showTooltip(html, ev) {
	el.tooltip.innerHTML = html;
	el.tooltip.hidden = false;
	const pad = 14;
	const tw = el.tooltip.offsetWidth;
	const th = el.tooltip.offsetHeight;
	let x = ev.clientX + pad;
	let y = ev.clientY + pad;
	if (x + tw > window.innerWidth - 4) x = Math.max(4, ev.clientX - tw - pad);
	if (y + th > window.innerHeight - 4) y = Math.max(4, ev.clientY - th - pad);
	el.tooltip.style.left = `${x}px`;
	el.tooltip.style.top = `${y}px`;
}

export function hideTooltip() {
	el.tooltip.hidden = true;
}

/* Theme colours, read once per theme (getComputedStyle is too slow per frame). */
const cssCache = new Map();
export function cssVar(name) {
	let v = cssCache.get(name);
	if (v === undefined) {
		v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
		cssCache.set(name, v);
	}
	return v;
}
export function clearCssCache() {
	cssCache.clear();
}

export function clearCanvas(c) {
	c.height = 0;
	c.style.height = '0px';
}

/* The content width of @wrap (without its padding), at least @min px. */
export function innerWidth(wrap, min) {
	const cs = getComputedStyle(wrap);
	return Math.max(min, Math.floor(wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
}
