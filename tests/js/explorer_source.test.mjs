// SPDX-License-Identifier: Apache-2.0
/*
 * explorer_source.test.mjs - drives Debian's chromium (playwright-core)
 * through the explorer's source view on the data of
 * tests/integration/test_explorer_source.sh: cmp_slow of
 * tests/workloads/sortline.c, 20 samples on its HOT line, 3 on its CMP
 * line, 1 on its first line, twice: service sortline built from a file
 * under the server's --source-path, sortline_ns from one outside it.
 * Right click on cmp_slow in the flame graph -> "Show source": the
 * file's lines with cost bars, the HOT line marked hottest with the
 * API's share; for sortline_ns the per-line table and the server's
 * reason. Escape closes the view. The filter bar's fold control on
 * service recur (main;qsort;msort;msort;msort;cmp 70 ms of 100): with
 * "recursion" one msort frame with cmp 70 ms right under it, the API's
 * fold=recursion flame graph, and fold in the URL; "none" brings the three
 * levels back. Screenshots go to $PROFD_ARTIFACTS.
 *
 * Environment: PROFD_URL, PROFD_T (ms: the samples' time), PROFD_HOT,
 * PROFD_CMP, PROFD_FIRST (line numbers), CHROMIUM.
 * Prints "ok ..." / "FAIL ..." lines; exits 1 when anything failed.
 */
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const base = process.env.PROFD_URL || 'http://127.0.0.1:4040/';
const T = +process.env.PROFD_T;
const HOT = +process.env.PROFD_HOT;
const CMP = +process.env.PROFD_CMP;
const FIRST = +process.env.PROFD_FIRST;
const artifacts = path.resolve(root, process.env.PROFD_ARTIFACTS || 'tests/artifacts/ui');
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';

let failures = 0;
function check(cond, m, detail) {
	if (cond) console.log(`ok - ${m}`);
	else {
		failures++;
		console.log(`FAIL - ${m}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
	}
	return cond;
}

async function apiGet(p, params) {
	const u = new URL(p, base);
	for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
	const r = await fetch(u);
	if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
	return r.json();
}

function pageUrl(params) {
	const u = new URL(base);
	for (const [k, v] of Object.entries(params)) u.searchParams.set(k, String(v));
	return u.toString();
}

/* Open the flame graph of @svc and the source view of cmp_slow from its frame menu. */
async function openFromMenu(page, svc) {
	await page.goto(pageUrl({ type: CPU, query: `{service.name="${svc}"}`, from: T - 60000, to: T + 60000, view: 'flame' }));
	await page.waitForFunction(() => window.profd?.views?.flame?.state === 'ready', null, { timeout: 30000 });
	const node = await page.evaluate(() => window.profdFlame.nodes.find((n) => n.name === 'cmp_slow'));
	const box = await page.locator('#flamegraph').boundingBox();
	await page.mouse.click(box.x + node.x + Math.min(node.w / 2, 40), box.y + node.y + node.h / 2, { button: 'right' });
	await page.waitForSelector('#frame-menu:not([hidden])', { timeout: 5000 });
	await page.click('#frame-menu button[data-act="source"]');
	await page.waitForFunction(() => ['ready', 'empty', 'error'].includes(window.profd.views.source.state), null, { timeout: 20000 });
	return page.evaluate(() => ({ ...window.profd.views.source, words: window.profd.views.menu.source }));
}

/*
 * The paths of the page's flame graph, "a;b;c total", from its drawn
 * nodes: a node's parent is the node one level up whose span holds it.
 */
async function paths(page) {
	return page.evaluate(() => {
		const ns = window.profdFlame.nodes;
		const up = (n) => ns.find((m) => m.depth === n.depth - 1 && m.x <= n.x + 0.5 && n.x + n.w <= m.x + m.w + 0.5);
		return ns.filter((n) => n.depth > 0).map((n) => {
			const p = [];
			for (let x = n; x && x.depth > 0; x = up(x)) p.unshift(x.name);
			return `${p.join(';')} ${n.total}`;
		});
	});
}

async function foldControl(page) {
	const q = '{service.name="recur"}';
	await page.goto(pageUrl({ type: CPU, query: q, from: T - 60000, to: T + 60000, view: 'flame' }));
	await page.waitForFunction(() => window.profd?.views?.flame?.state === 'ready', null, { timeout: 30000 });
	const before = await paths(page);
	check(before.includes('main;qsort;msort;msort;msort;cmp 70000000'), 'fold none (default): the three msort levels', before);
	await page.selectOption('#fold-select', 'recursion');
	await page.waitForFunction(() => new URL(location.href).searchParams.get('fold') === 'recursion' && window.profd.views.flame.state === 'ready', null, { timeout: 30000 });
	await page.waitForFunction(() => window.profdFlame.nodes.filter((n) => n.name === 'msort').length === 1, null, { timeout: 30000 });
	const folded = await paths(page);
	const api = await apiGet('api/v1/flamegraph', { type: CPU, query: q, from: T - 60000, to: T + 60000, fold: 'recursion' });
	const msort = api.root.children.find((c) => c.name === 'main').children.find((c) => c.name === 'qsort').children.find((c) => c.name === 'msort');
	check(folded.includes('main;qsort;msort;cmp 70000000') && folded.includes('main;qsort;msort 90000000') && msort.self === 20000000,
		"fold recursion: one msort frame (90 ms, the API's self 20 ms), cmp 70 ms right under it", folded);
	await page.screenshot({ path: path.join(artifacts, 'fold-recursion.png') });
	await page.selectOption('#fold-select', '');
	await page.waitForFunction(() => !new URL(location.href).searchParams.has('fold') && window.profdFlame.nodes.filter((n) => n.name === 'msort').length === 3, null, { timeout: 30000 });
	check((await paths(page)).includes('main;qsort;msort;msort;msort;cmp 70000000'), 'fold none again: the three msort levels, no fold in the URL');
}

async function main() {
	fs.mkdirSync(artifacts, { recursive: true });
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId: 'UTC' })).newPage();
	const errors = [];
	page.on('pageerror', (e) => errors.push(String(e)));
	try {
		const api = await apiGet('api/v1/source', { type: CPU, query: '{service.name="sortline"}', from: T - 60000, to: T + 60000, function: 'cmp_slow' });
		const v = await openFromMenu(page, 'sortline');
		check(v.state === 'ready' && v.mode === 'text', `the source view opens with the file's text (${v.state}, ${v.mode})`, v);
		check(v.hot[0] === HOT && v.words.endsWith(`sortline.c:${HOT}`), `the HOT line ${HOT} is the hottest (${v.words})`, v.hot);
		check(api.lines[0].line === HOT && api.lines[0].self === 200000000, "the API agrees: the HOT line's self is 200 ms", api.lines[0]);
		const rows = await page.$$eval('#source-body tr[data-line]', (t) => t.map((r) => ({
			line: +r.dataset.line, hot: r.dataset.hot === '1', sampled: r.classList.contains('sampled'),
			code: r.querySelector('.src-code')?.textContent || '', bar: r.querySelector('.bar-fill')?.style.width || '',
		})));
		const hotRow = rows.find((r) => r.line === HOT);
		check(hotRow && hotRow.hot && hotRow.sampled && hotRow.code.trim().endsWith('/* HOT */') && parseFloat(hotRow.bar) === 83.33,
			"the HOT line's row: marked hottest, its code, its bar at 83.33 % (200 of the function's 240 ms)", hotRow);
		const cmpRow = rows.find((r) => r.line === CMP);
		check(cmpRow && cmpRow.sampled && parseFloat(cmpRow.bar) === 12.5 && /CMP/.test(cmpRow.code), 'the CMP line: sampled, its bar at 12.50 %', cmpRow);
		check(rows[0].line === Math.max(1, FIRST - 4) && rows.at(-1).line === CMP + 4 && rows.filter((r) => r.sampled).length === 3,
			`the file's lines from ${rows[0].line} to ${rows.at(-1).line}, 3 of them sampled`, rows.map((r) => r.line));
		await page.screenshot({ path: path.join(artifacts, 'source-view.png') });
		await page.keyboard.press('Escape');
		check(await page.isHidden('#source-panel'), 'Escape closes the source view');

		const n = await openFromMenu(page, 'sortline_ns');
		check(n.state === 'ready' && n.mode === 'table' && n.hot[0] === HOT, `outside the source path: the per-line table, HOT line ${HOT} first`, n);
		const why = await page.textContent('[data-testid="source-reason"]');
		check(/sortline_ns\.c is not under the source path/.test(why), `and the reason: ${why}`);
		const trows = await page.$$eval('#source-body tr[data-line]', (t) => t.map((r) => +r.dataset.line));
		check(JSON.stringify(trows) === JSON.stringify([FIRST, HOT, CMP]), `the table lists the 3 sampled lines: ${trows.join(', ')}`);
		await page.screenshot({ path: path.join(artifacts, 'source-view-table.png') });
		await page.keyboard.press('Escape');
		await foldControl(page);
	} finally {
		check(errors.length === 0, 'no script errors on the page', errors.join(' | '));
		await browser.close();
	}
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
	console.log(`FAIL - ${e.stack || e}`);
	process.exit(1);
});
