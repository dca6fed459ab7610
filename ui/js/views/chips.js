// SPDX-License-Identifier: Apache-2.0
/*
 * chips.js - the view filters: "keep stacks with" chips (OR'ed: a stack
 * with a frame matching any of them stays, and the bar says so), "hide
 * frames matching" chips, the runtime presets and the fold control.
 */
import { actions } from '../ctx.js';
import { el, toast } from '../dom.js';
import { escapeHtml } from '../format.js';
import { state } from '../state.js';

export function renderChips() {
	const chips = [];
	const many = state.sf.length > 1;
	if (many) chips.push(`<span class="chip-join" data-testid="chips-or" title="A stack stays when a frame matches any of these">keep stacks with any of:</span>`);
	state.sf.forEach((s, i) => {
		if (i > 0) chips.push('<span class="chip-or" aria-hidden="true">or</span>');
		chips.push(`<span class="chip stack" data-kind="sf" data-i="${i}" title="Keep only stacks with a frame matching this regex${many ? ' (or any other stack chip)' : ''}">stack ∋ <code>${escapeHtml(s)}</code><button type="button" aria-label="Remove">×</button></span>`);
	});
	if (state.sf.length && state.ff.length) chips.push('<span class="chip-sep" aria-hidden="true"></span>');
	state.ff.forEach((s, i) => chips.push(`<span class="chip frame" data-kind="ff" data-i="${i}" title="Frames matching this regex are hidden; their cost goes to the caller">hide <code>${escapeHtml(s)}</code><button type="button" aria-label="Remove">×</button></span>`));
	el.chips.innerHTML = chips.length ? chips.join('') : '<span class="chips-none">none</span>';
	for (const cb of el.hidePresets.querySelectorAll('input')) cb.checked = state.hide.includes(cb.value);
	el.fold.value = state.fold;
}

function addChip() {
	const v = el.chipInput.value.trim();
	if (!v) return;
	try {
		new RegExp(v); // eslint-disable-line no-new
	} catch (e) {
		toast(`Not a regular expression: ${e.message}`);
		return;
	}
	(el.chipKind.value === 'frame' ? state.ff : state.sf).push(v);
	el.chipInput.value = '';
	actions.filtersChanged();
}
el.chipAdd.addEventListener('click', addChip);
el.chipInput.addEventListener('keydown', (ev) => {
	if (ev.key === 'Enter') {
		ev.preventDefault();
		addChip();
	}
});
el.chips.addEventListener('click', (ev) => {
	const b = ev.target.closest('button');
	if (!b) return;
	const chip = b.closest('.chip');
	state[chip.dataset.kind].splice(+chip.dataset.i, 1);
	actions.filtersChanged();
});
el.fold.addEventListener('change', () => {
	state.fold = el.fold.value;
	actions.filtersChanged();
});
el.hidePresets.addEventListener('change', () => {
	state.hide = [...el.hidePresets.querySelectorAll('input:checked')].map((c) => c.value);
	actions.filtersChanged();
});
