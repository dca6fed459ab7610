// SPDX-License-Identifier: Apache-2.0
/*
 * source.js - the source view of one function (the frame menu's "Show
 * source"): /api/v1/source of the selection, the function's cost per
 * source line. With the file's text (the server's --source-path) it shows
 * the file's lines around the sampled ones, each with its self cost as a
 * bar and its total, the hottest lines marked; without it, the per-line
 * table and the server's reason. One panel over the page; Escape or the
 * close button shuts it.
 */
import { api } from '../api.js';
import { pub } from '../ctx.js';
import { $, hideMsg, showMsg } from '../dom.js';
import { escapeHtml, fmtPct, fmtValue } from '../format.js';
import { selection } from '../state.js';

/* Lines of context shown above the first and below the last sampled line. */
const CONTEXT = 4;
/* The hottest lines marked (by self, those with any self cost). */
const HOT_MARKED = 3;

const panel = $('source-panel');
const body = $('source-body');
const title = $('source-title');
const msg = $('source-message');
export const source = { state: 'idle', fn: '', lines: [], files: [], hot: [], mode: '' };
pub.views.source = source;

function bar(v, whole) {
	const pct = whole ? Math.max(0, Math.min(100, (100 * v) / whole)) : 0;
	return `<span class="bar"><span class="bar-pct">${fmtPct(v, whole)}</span><span class="bar-track"><span class="bar-fill" style="width:${pct.toFixed(2)}%"></span></span></span>`;
}

const placeOf = (l) => `${l.build_id}\u0000${l.file}`;

/* The hottest lines' keys ("build\0file\0line"), by self. */
function hottest(lines) {
	return lines
		.filter((l) => l.self > 0)
		.sort((a, b) => b.self - a.self || a.line - b.line)
		.slice(0, HOT_MARKED)
		.map((l) => `${placeOf(l)}\u0000${l.line}`);
}

function row(no, l, text, total, unit, hot) {
	const cost = l ? `<td class="src-num">${escapeHtml(fmtValue(l.self, unit))}</td><td class="src-bar">${bar(l.self, total)}</td><td class="src-num">${escapeHtml(fmtValue(l.total, unit))}</td>`
		: '<td class="src-num"></td><td class="src-bar"></td><td class="src-num"></td>';
	const cls = [l ? 'sampled' : '', hot ? 'hot' : ''].filter(Boolean).join(' ');
	return `<tr data-line="${no}"${cls ? ` class="${cls}"` : ''}${hot ? ' data-hot="1"' : ''}><td class="src-no">${hot ? '<span class="src-mark" title="hottest line">●</span>' : ''}${no || '?'}</td>${cost}` +
		(text === null ? '' : `<td class="src-code"><code>${escapeHtml(text)}</code></td>`) + '</tr>';
}

function fileBlock(f, lines, data, hot) {
	const unit = data.unit;
	const total = +data.total || 0;
	const head = `<div class="src-file"><strong>${escapeHtml(f.file || '(no source file known)')}</strong>` +
		(f.build_id ? ` <span class="src-build">build ${escapeHtml(f.build_id.slice(0, 16))}</span>` : '') +
		` · self ${escapeHtml(fmtValue(f.self, unit))} on ${lines.length} line${lines.length === 1 ? '' : 's'}</div>`;
	const byLine = new Map(lines.map((l) => [l.line, l]));
	const isHot = (l) => hot.includes(`${placeOf(l)}\u0000${l.line}`);
	const cols = '<tr><th>line</th><th>self</th><th></th><th>total</th>';
	if (Array.isArray(f.text) && f.text.length) {
		const known = lines.filter((l) => l.line > 0).map((l) => l.line);
		const lo = Math.max(1, Math.min(...known) - CONTEXT);
		const hi = Math.min(f.text.length, Math.max(...known) + CONTEXT);
		const rows = [];
		for (let no = lo; no <= hi; no++) {
			const l = byLine.get(no);
			rows.push(row(no, l, f.text[no - 1] ?? '', total, unit, l && isHot(l)));
		}
		return `${head}<table class="src-table" data-mode="text"><thead>${cols}<th>source</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
	}
	const why = f.reason ? `<div class="src-why" data-testid="source-reason">No source text: ${escapeHtml(f.reason)}</div>` : '';
	const rows = lines.slice().sort((a, b) => a.line - b.line).map((l) => row(l.line, l, null, total, unit, isHot(l)));
	return `${head}${why}<table class="src-table" data-mode="table"><thead>${cols}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

export function closeSource() {
	panel.hidden = true;
	source.state = 'idle';
}

/*
 * Open the panel on function @name; resolves to a line of words about
 * what it shows (the hottest line, or why nothing), for the frame menu.
 */
export async function openSource(name) {
	panel.hidden = false;
	source.state = 'loading';
	source.fn = name;
	title.textContent = `Source of ${name}`;
	body.replaceChildren();
	showMsg(msg, 'loading', `Loading the lines of ${name}…`, '');
	$('source-close').focus();
	let data;
	try {
		data = await api('api/v1/source', selection({ function: name, text: 'file', sort: 'line', limit: 0 }));
	} catch (e) {
		if (source.fn !== name) return '';
		source.state = 'error';
		showMsg(msg, 'error', 'Could not load the source lines', escapeHtml(e.message));
		return e.message;
	}
	if (source.fn !== name) return '';
	source.lines = data.lines || [];
	source.files = (data.files || []).map((f) => ({ file: f.file, build_id: f.build_id, source: f.source, reason: f.reason || '' }));
	if (!data.found || !source.lines.length) {
		source.state = 'empty';
		source.hot = [];
		showMsg(msg, 'empty', `${name} has no samples here`, 'No sample of this selection has a frame of it.');
		return `${name}: not in this selection`;
	}
	hideMsg(msg);
	const hot = hottest(source.lines);
	source.hot = source.lines.filter((l) => hot.includes(`${placeOf(l)}\u0000${l.line}`)).sort((a, b) => b.self - a.self).map((l) => l.line);
	source.mode = (data.files || []).some((f) => Array.isArray(f.text)) ? 'text' : 'table';
	const builds = data.builds || [];
	const summary = `<div class="src-summary">self ${escapeHtml(fmtValue(data.self, data.unit))} · total ${escapeHtml(fmtValue(data.total, data.unit))} (${fmtPct(data.total, data.profile_total)} of all)` +
		(builds.length > 1 ? ` · ${builds.length} builds, each with its lines` : '') + '</div>';
	body.innerHTML = summary + (data.files || [])
		.map((f) => fileBlock(f, source.lines.filter((l) => l.file === f.file && l.build_id === f.build_id), data, hot))
		.join('');
	source.state = 'ready';
	const top = source.lines.slice().sort((a, b) => b.self - a.self || b.total - a.total)[0];
	if (!(top.line > 0)) return `${name}: no source line known (the profile gives its name only)`;
	return `${name}: hottest line ${top.file || '?'}:${top.line}`;
}

$('source-close').addEventListener('click', closeSource);
/* Escape closes the view first, before the page's own Escape (zoom out), wherever the focus is. */
document.addEventListener('keydown', (ev) => {
	if (ev.key === 'Escape' && !panel.hidden) {
		ev.stopPropagation();
		closeSource();
	}
}, true);
