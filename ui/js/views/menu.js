// SPDX-License-Identifier: Apache-2.0
/*
 * menu.js - the frame menu: right click on a frame of the flame graph,
 * the sandwich or the diff: open in sandwich, focus (zoom), hide this
 * frame, keep stacks through it, copy name, copy stack, show source
 * (the source view: the function's cost per line, views/source.js).
 * Keyboard: arrows move, Enter picks, Escape closes.
 */
import { actions, pub } from '../ctx.js';
import { el, toast } from '../dom.js';
import { escapeHtml } from '../format.js';
import { state } from '../state.js';
import { exactRegex, pathOf } from '../tree.js';
import { openSource } from './source.js';

const ITEMS = [
	['sandwich', 'Open in sandwich'],
	['focus', 'Focus on this frame'],
	['hide', 'Hide this frame'],
	['keep', 'Keep only stacks through it'],
	['copy-name', 'Copy name'],
	['copy-stack', 'Copy stack'],
	['source', 'Show source (cost per line)'],
];

let current = null; /* {node, graph, opts} */
const model = { open: false, name: '', items: ITEMS.map((i) => i[0]), last: null };
pub.views.menu = model;

/* Copies @text; tests read pub.copied (headless browsers may refuse the clipboard). */
export async function copyText(text, what) {
	pub.copied = text;
	try {
		await navigator.clipboard.writeText(text);
	} catch (e) {
		const ta = document.createElement('textarea');
		ta.value = text;
		document.body.appendChild(ta);
		ta.select();
		try {
			document.execCommand('copy');
		} catch (e2) {
			/* nothing more to try: pub.copied has it */
		}
		ta.remove();
	}
	toast(`Copied ${what}.`);
}

export function closeFrameMenu() {
	el.menu.hidden = true;
	model.open = false;
	current = null;
}

/* @opts: {inverted, noFocus, noSandwich} */
export function openFrameMenu(node, ev, graph, opts) {
	if (!node.parent) return; /* the root is not a frame */
	current = { node, graph, opts: opts || {} };
	model.open = true;
	model.name = node.name;
	const m = el.menu;
	m.innerHTML = `<div class="fm-name" title="${escapeHtml(node.name)}">${escapeHtml(node.name)}</div>` +
		ITEMS.filter(([k]) => !(k === 'focus' && current.opts.noFocus))
			.map(([k, label]) => `<button type="button" role="menuitem" data-act="${k}">${escapeHtml(label)}</button>`)
			.join('');
	m.hidden = false;
	const w = m.offsetWidth;
	const h = m.offsetHeight;
	m.style.left = `${Math.max(4, Math.min(ev.clientX, window.innerWidth - w - 4))}px`;
	m.style.top = `${Math.max(4, Math.min(ev.clientY, window.innerHeight - h - 4))}px`;
	m.querySelector('button').focus();
}

async function pick(act) {
	const c = current;
	closeFrameMenu();
	if (!c) return;
	const name = c.node.name;
	model.last = { act, name };
	switch (act) {
	case 'sandwich':
		actions.selectFunction(name, true);
		break;
	case 'focus':
		c.graph.zoom(c.node, true);
		break;
	case 'hide':
		if (!state.ff.includes(exactRegex(name))) state.ff.push(exactRegex(name));
		actions.filtersChanged();
		break;
	case 'keep':
		if (!state.sf.includes(exactRegex(name))) state.sf.push(exactRegex(name));
		actions.filtersChanged();
		break;
	case 'copy-name':
		await copyText(name, 'the name');
		break;
	case 'copy-stack': {
		const path = pathOf(c.node);
		/* root first, one frame a line, as a debugger prints it reversed */
		const lines = c.opts.inverted ? path.slice().reverse() : path;
		await copyText(lines.join('\n'), `the stack (${lines.length} frames, root first)`);
		break;
	}
	case 'source':
		model.source = await openSource(name);
		break;
	default:
		break;
	}
}

el.menu.addEventListener('click', (ev) => {
	const b = ev.target.closest('button[data-act]');
	if (b) pick(b.dataset.act);
});
el.menu.addEventListener('keydown', (ev) => {
	const items = [...el.menu.querySelectorAll('button')];
	const i = items.indexOf(document.activeElement);
	if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
		ev.preventDefault();
		items[(i + (ev.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length].focus();
	} else if (ev.key === 'Escape') {
		ev.stopPropagation();
		closeFrameMenu();
	}
});
document.addEventListener('mousedown', (ev) => {
	if (!el.menu.hidden && !el.menu.contains(ev.target)) closeFrameMenu();
});
window.addEventListener('blur', closeFrameMenu);
