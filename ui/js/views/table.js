// SPDX-License-Identifier: Apache-2.0
/*
 * table.js - the table view: /api/v1/table of the selection, one row per
 * function: self, total, their sample counts, the source file:line and
 * the binary (where the API knows them); sort by column, filter by name;
 * a row opens the function in the sandwich.
 */
import { Slot } from '../api.js';
import { pub } from '../ctx.js';
import { busy, el, hideMsg, showMsg, $ } from '../dom.js';
import { escapeHtml, fmtCount, fmtPct, fmtValue } from '../format.js';
import { selection, state } from '../state.js';
import { emptyWords, rangeWords } from './common.js';

const TABLE_ROWS = 500;
const slot = new Slot();
const viewNode = $('view-table');
export const table = { state: 'idle', rows: [], unit: '', total: 0 };
pub.views.table = table;

function clearRows() {
	table.rows = [];
	el.topTable.tBodies[0].replaceChildren();
	el.tableSummary.textContent = '';
}

export async function loadTable() {
	const t = slot.begin();
	table.state = 'loading';
	busy(viewNode, true);
	if (!table.rows.length) showMsg(el.tableMsg, 'loading', 'Loading the table…', '');
	let data;
	try {
		data = await t.get('api/v1/table', selection({ sort: 'self' }));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		table.state = 'error';
		clearRows();
		showMsg(el.tableMsg, 'error', 'Could not load the table', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	table.rows = data.rows || [];
	table.unit = data.unit || '';
	table.total = +data.total || 0;
	table.samples = data.samples || 0;
	table.request = data.type;
	el.fnList.innerHTML = table.rows.slice(0, 2000).map((r) => `<option value="${escapeHtml(r.name)}">`).join('');
	if (!table.rows.length) {
		table.state = 'empty';
		clearRows();
		showMsg(el.tableMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
		return;
	}
	hideMsg(el.tableMsg);
	renderTable();
	table.state = 'ready';
}

function barCell(v, whole) {
	const pct = whole ? Math.max(0, Math.min(100, (100 * v) / whole)) : 0;
	return `<td class="col-bar"><div class="bar"><span class="bar-pct">${fmtPct(v, whole)}</span><span class="bar-track"><span class="bar-fill" style="width:${pct.toFixed(2)}%"></span></span></div></td>`;
}

function baseName(path) {
	const i = String(path).lastIndexOf('/');
	return i >= 0 ? path.slice(i + 1) : path;
}

const cmpName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const SORTS = {
	name: cmpName,
	self: (a, b) => b.self - a.self || cmpName(a, b),
	total: (a, b) => b.total - a.total || cmpName(a, b),
	samples: (a, b) => (b.total_samples || 0) - (a.total_samples || 0) || cmpName(a, b),
	file: (a, b) => String(a.file || '\uffff').localeCompare(String(b.file || '\uffff')) || (a.line || 0) - (b.line || 0) || cmpName(a, b),
	binary: (a, b) => String(a.mapping || '\uffff').localeCompare(String(b.mapping || '\uffff')) || cmpName(a, b),
};

export function renderTable() {
	const key = SORTS[state.sort] ? state.sort : 'self';
	const q = state.tableSearch.toLowerCase();
	const rows = q ? table.rows.filter((r) => r.name.toLowerCase().includes(q)) : table.rows.slice();
	rows.sort(SORTS[key]);
	const shown = rows.slice(0, TABLE_ROWS);
	table.shown = shown.map((r) => r.name);
	const what = `${fmtCount(rows.length)}${q ? ` of ${fmtCount(table.rows.length)}` : ''} functions`;
	el.tableSummary.textContent = `${rows.length > TABLE_ROWS ? `first ${TABLE_ROWS} of ` : ''}${what} · total ${fmtValue(table.total, table.unit)} · sorted by ${key}`;
	for (const th of el.topTable.querySelectorAll('th.sortable'))
		th.setAttribute('aria-sort', th.dataset.sort === key ? (['name', 'file', 'binary'].includes(key) ? 'ascending' : 'descending') : 'none');
	el.topTable.tBodies[0].innerHTML = shown
		.map((r) => {
			const file = r.file ? `${r.file}${r.line ? `:${r.line}` : ''}` : '';
			const bin = r.mapping || '';
			return `<tr data-name="${escapeHtml(r.name)}" data-self="${r.self}" data-total="${r.total}" data-samples="${r.total_samples || 0}"${state.fn === r.name ? ' class="selected"' : ''}>` +
				`<td class="col-fn" title="${escapeHtml(r.name)}">${escapeHtml(r.name)}</td>` +
				`<td class="col-num">${escapeHtml(fmtValue(r.self, table.unit))}</td>${barCell(r.self, table.total)}` +
				`<td class="col-num">${escapeHtml(fmtValue(r.total, table.unit))}</td>${barCell(r.total, table.total)}` +
				`<td class="col-num col-samples" title="${fmtCount(r.self_samples || 0)} samples with it as the leaf">${fmtCount(r.total_samples || 0)}</td>` +
				`<td class="col-file" title="${escapeHtml(file)}">${escapeHtml(file ? baseName(r.file) + (r.line ? `:${r.line}` : '') : '–')}</td>` +
				`<td class="col-bin" title="${escapeHtml(bin + (r.build_id ? ` (build ID ${r.build_id})` : ''))}">${escapeHtml(bin ? baseName(bin) : '–')}</td></tr>`;
		})
		.join('');
	if (!shown.length) showMsg(el.tableMsg, 'empty', 'No function matches the filter', `Nothing contains <code>${escapeHtml(state.tableSearch)}</code>.`);
	else hideMsg(el.tableMsg);
}
