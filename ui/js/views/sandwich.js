// SPDX-License-Identifier: Apache-2.0
/*
 * sandwich.js - the sandwich view of one function: its callers (root at
 * the bottom) and callees (at the top), /api/v1/sandwich.
 */
import { Slot } from '../api.js';
import { pub } from '../ctx.js';
import { busy, cssVar, el, hideMsg, showMsg, $ } from '../dom.js';
import { FlameGraph } from '../flamegraph.js';
import { escapeHtml, fmtPct, fmtValue } from '../format.js';
import { selection, state } from '../state.js';
import { prepare } from '../tree.js';
import { colorOf, rangeWords, valueTooltip } from './common.js';
import { openFrameMenu } from './menu.js';

const slot = new Slot();
const viewNode = $('view-sandwich');

const swOpts = (getView, flipped) => ({
	flipped: () => flipped,
	fill: (n) => ({ fill: colorOf(n.name, n) }),
	rootFill: () => ({ fill: cssVar('--selected-fill') || '#9ec1f7', text: cssVar('--frame-text') || '#1b1f27' }),
	rootLabel: (n) => `${n.name} · ${fmtValue(n.total, sandwich.unit)}`,
	tooltip: (n) => valueTooltip(n.name, n, sandwich.profileTotal, sandwich.unit, getView().focus),
	onMenu: (n, ev, g) => openFrameMenu(n, ev, g, { inverted: flipped }),
});
export const swCallers = new FlameGraph($('sw-callers'), $('sw-callers-wrap').querySelector('.overlay'), swOpts(() => swCallers, true));
export const swCallees = new FlameGraph($('sw-callees'), $('sw-callees-wrap').querySelector('.overlay'), swOpts(() => swCallees, false));
export const sandwich = { state: 'idle', fn: '', callers: swCallers.model, callees: swCallees.model, unit: '', profileTotal: 0 };
pub.views.sandwich = sandwich;

function clearBoth() {
	swCallers.clear();
	swCallees.clear();
	el.swSummary.textContent = '';
}

export async function loadSandwich() {
	el.swFn.value = state.fn;
	const t = slot.begin();
	if (!state.fn) {
		busy(viewNode, false);
		clearBoth();
		sandwich.state = 'empty';
		showMsg(el.swMsg, 'empty', 'Pick a function', 'Type a function name above, click a row of the table, right click a frame, or press <kbd>Enter</kbd> in the flame graph search.');
		return;
	}
	sandwich.state = 'loading';
	busy(viewNode, true);
	if (!swCallers.root) showMsg(el.swMsg, 'loading', `Loading callers and callees of ${state.fn}…`, '');
	let data;
	try {
		data = await t.get('api/v1/sandwich', selection({ function: state.fn, max_nodes: 4096 }));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		clearBoth();
		sandwich.state = 'error';
		showMsg(el.swMsg, 'error', 'Could not load the sandwich', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	sandwich.fn = state.fn;
	sandwich.unit = data.unit || '';
	sandwich.profileTotal = +data.profile_total || 0;
	sandwich.total = +data.total || 0;
	sandwich.self = +data.self || 0;
	if (!data.found) {
		clearBoth();
		sandwich.state = 'empty';
		showMsg(el.swMsg, 'empty', `${state.fn} is not in this selection`, `No sample in ${escapeHtml(rangeWords())} has a frame named exactly <code>${escapeHtml(state.fn)}</code>.`);
		return;
	}
	hideMsg(el.swMsg);
	for (const [view, side] of [[swCallers, data.callers], [swCallees, data.callees]]) {
		prepare(side.root);
		view.setData(side.root, data.unit);
		view.render();
	}
	sandwich.callerNames = data.callers.root.children.map((c) => c.name);
	sandwich.calleeNames = data.callees.root.children.map((c) => c.name);
	$('sw-callers-note').textContent = sandwich.callerNames.length ? '(who calls it; the function at the bottom)' : '(none: it is a root of its stacks)';
	$('sw-callees-note').textContent = sandwich.calleeNames.length ? '(what it calls; the function at the top)' : '(none: all of its time is self time)';
	el.swSummary.innerHTML = `<strong>${escapeHtml(state.fn)}</strong> · self ${escapeHtml(fmtValue(sandwich.self, sandwich.unit))} (${fmtPct(sandwich.self, sandwich.profileTotal)}) · total ${escapeHtml(fmtValue(sandwich.total, sandwich.unit))} (${fmtPct(sandwich.total, sandwich.profileTotal)})`;
	sandwich.state = 'ready';
}

export function renderSandwich() {
	for (const f of [swCallers, swCallees]) if (f.root) f.render();
}
