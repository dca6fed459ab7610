// SPDX-License-Identifier: Apache-2.0
/*
 * common.js - words and tooltips the views share.
 */
import { escapeHtml, fmtPct, fmtRange, fmtValue } from '../format.js';
import { PRESETS, state } from '../state.js';
import { frameColor } from '../color.js';

export function rangeWords(s = state) {
	if (s.range === 'abs') return fmtRange(s.from, s.to);
	return PRESETS[s.range][0];
}

export function emptyWords() {
	const what = state.query ? `matching <code>${escapeHtml(state.query)}</code>` : 'of this type';
	return `Nothing ${what} was recorded in ${escapeHtml(rangeWords())}. Check the label filters, pick another profile type, or widen the time range.`;
}

export function valueTooltip(name, n, total, unit, focus) {
	let rows = `<tr><td class="k">Self</td><td class="v">${escapeHtml(fmtValue(n.self, unit))}</td><td class="p">${fmtPct(n.self, total)}</td></tr>`;
	rows += `<tr><td class="k">Total</td><td class="v">${escapeHtml(fmtValue(n.total, unit))}</td><td class="p">${fmtPct(n.total, total)}</td></tr>`;
	if (focus && n !== focus && focus.total && n.depth > focus.depth)
		rows += `<tr><td class="k">Of zoomed</td><td class="v"></td><td class="p">${fmtPct(n.total, focus.total)}</td></tr>`;
	return `<div class="tt-name">${escapeHtml(name)}</div><table>${rows}</table><div class="tt-hint">Right click: more</div>`;
}

/* Frame type by name, from the last flame graph (the sandwich and flame chart have none). */
export const frameTypes = { byName: new Map() };

/* The colour of frame @name (node @node when known) in the colour mode picked. */
export function colorOf(name, node) {
	return frameColor(state.color, name, (node && node.frameType) || frameTypes.byName.get(name) || '');
}
