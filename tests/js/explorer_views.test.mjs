// SPDX-License-Identifier: Apache-2.0
/*
 * explorer_views.test.mjs - drives Debian's chromium (playwright-core)
 * through every view of the Profiling Explorer on the data that
 * tests/integration/test_explorer.sh ingests, and checks what the page
 * shows against the JSON API's numbers (fetched here, independently of
 * the page) and against the workload's known shape:
 *   query bar (type, absolute range, label autocompletion, Sum by),
 *   chart legend totals, clicking a series filters to it; flame graph
 *   (hot function, search share, tooltip); table (self/total = API's,
 *   sorting, a row opens the sandwich and marks the flame graph);
 *   sandwich (known callers); flame chart (lanes, zoom in time); compare
 *   (changed function red, the other changed one green, unchanged ones
 *   neutral, in both modes; mismatched types refused in words); stack
 *   health (per binary, API's shares); exports (pprof, SVG, folded,
 *   speedscope; in Compare: each side's pprof, folded and SVG and the
 *   diff's JSON, labelled as such); a copied link restores the whole state; dark theme;
 *   empty and error states; the 16 000-leaf flame graph's render and
 *   hover times (reported, not asserted); interpreter frames (hide=python
 *   keeps the Python functions, colour by frame type with its legend);
 *   the corpus Go CPU profile.
 * Screenshots go to $PROFD_ARTIFACTS (default tests/artifacts/ui).
 *
 * Environment: PROFD_URL, PROFD_T0 (ms, see the shell test),
 * PROFD_CORPUS_FROM (ms; empty: no corpus), CHROMIUM.
 * Prints "ok ..." / "FAIL ..." lines; exits 1 when anything failed.
 */
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const base = process.env.PROFD_URL || 'http://127.0.0.1:4040/';
const T0 = +process.env.PROFD_T0;
const corpusFrom = +(process.env.PROFD_CORPUS_FROM || 0);
const artifacts = path.resolve(root, process.env.PROFD_ARTIFACTS || 'tests/artifacts/ui');
const CPU = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds';
const MEM = 'memory:inuse_space:bytes:inuse_space:bytes';
const FROM = T0 - 60000;
const TO = T0 + 1260000;
const SHOP = '{service.name="shop"}';

let failures = 0;
const ok = (m) => console.log(`ok - ${m}`);
function check(cond, m, detail) {
	if (cond) ok(m);
	else {
		failures++;
		console.log(`FAIL - ${m}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
	}
	return cond;
}

async function apiGet(p, params) {
	const u = new URL(p, base);
	for (const [k, v] of Object.entries(params)) if (v !== '' && v !== undefined) u.searchParams.set(k, v);
	const r = await fetch(u);
	const text = await r.text();
	if (!r.ok) throw new Error(`${p}: ${r.status} ${text}`);
	return JSON.parse(text);
}

function pageUrl(params) {
	const u = new URL(base);
	for (const [k, v] of Object.entries(params)) u.searchParams.set(k, String(v));
	return u.toString();
}

async function shot(page, name) {
	const file = path.join(artifacts, `${name}.png`);
	await page.screenshot({ path: file, fullPage: true });
	ok(`screenshot ${path.relative(root, file)}`);
}

/* Wait until a view's model reports a settled state; returns it. */
async function settled(page, view, timeout = 30000) {
	await page.waitForFunction((v) => window.profd && window.profd.views[v] && ['ready', 'empty', 'error'].includes(window.profd.views[v].state), view, { timeout });
	return page.evaluate((v) => window.profd.views[v].state, view);
}

async function main() {
	if (!T0) throw new Error('set PROFD_T0');
	fs.mkdirSync(artifacts, { recursive: true });
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId: 'UTC', colorScheme: 'light' });
	const page = await context.newPage();
	const pageErrors = [];
	page.on('pageerror', (e) => pageErrors.push(String(e)));
	page.on('console', (m) => {
		if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
	});
	try {
		await workload(page);
		await bigProfile(page);
		await interpreterFrames(page);
		if (corpusFrom) await corpus(page);
		else console.log('skip: no corpus profile ingested');
		await states(page);
	} finally {
		check(pageErrors.length === 0, 'no script errors on the page', pageErrors.join(' | '));
		await browser.close();
	}
}

/* ---------------------------------------------------------------- workload */

async function workload(page) {
	/* Start from a bare page: pick the type, an absolute range, Sum by, through the controls. */
	await page.goto(base);
	await page.waitForFunction(() => document.querySelector('#type-select').options.length > 0 && window.profd.views.chart.state !== 'idle', null, { timeout: 20000 });
	check(await page.evaluate(() => window.profd.state.view) === 'overview', 'a bare visit lands on the service overview');
	await page.click('[data-testid="tab-flame"]');
	const options = await page.$$eval('#type-select option', (os) => os.map((o) => [o.value, o.textContent]));
	check(options.some(([v, t]) => v === CPU && /nanoseconds/.test(t)), 'type picker offers the CPU type with its unit', options);
	await page.selectOption('#type-select', CPU);
	await page.selectOption('#range-select', 'abs');
	const iso = (ms) => new Date(ms).toISOString().slice(0, 19);
	await page.fill('#from-input', iso(FROM));
	await page.fill('#to-input', iso(TO));
	await page.waitForFunction(() => document.querySelectorAll('#groupby-select option').length > 1, null, { timeout: 20000 });
	await page.selectOption('#groupby-select', 'process.executable.name');
	await page.fill('#query-input', '');
	await page.click('#run-button');
	await page.waitForFunction((f) => new URL(location.href).searchParams.get('from') === String(f) && window.profd.views.chart.state === 'ready', FROM, { timeout: 30000 });
	const series = await apiGet('api/v1/series', { type: CPU, from: FROM, to: TO, group_by: 'process.executable.name', limit: 10 });
	const legend = await page.$$eval('#legend li', (lis) => lis.map((li) => [li.dataset.label, +li.dataset.total]));
	const want = series.series.map((s) => [`process.executable.name=${s.labels['process.executable.name']}`, s.total]);
	check(JSON.stringify(legend) === JSON.stringify(want), `chart: one series per executable, legend totals equal the API's (${legend.map((l) => l.join(' ')).join(', ')})`, { legend, want });
	check(await page.$eval('#chart', (c) => !!c.querySelector('canvas')), 'chart drawn (uPlot canvas)');

	/* Clicking a series filters to it. */
	await page.click('#legend li[data-label="process.executable.name=checkoutd"]');
	await page.waitForFunction(() => window.profd.state.query.includes('checkoutd') && window.profd.views.chart.state === 'ready' && window.profd.views.flame.state === 'ready', null, { timeout: 30000 });
	const q1 = await page.inputValue('#query-input');
	const legend1 = await page.$$eval('#legend li', (lis) => lis.map((li) => li.dataset.label));
	check(q1 === '{process.executable.name="checkoutd"}' && legend1.length === 1, `clicking a legend entry filters to it: ${q1}`, legend1);

	/* Dragging across the chart zooms the time range. */
	const cbox = await page.locator('#chart .u-over').boundingBox();
	await page.mouse.move(cbox.x + cbox.width * 0.1, cbox.y + cbox.height / 2);
	await page.mouse.down();
	await page.mouse.move(cbox.x + cbox.width * 0.45, cbox.y + cbox.height / 2, { steps: 6 });
	await page.mouse.up();
	await page.waitForFunction((f) => +new URL(location.href).searchParams.get('from') > f && window.profd.views.chart.state === 'ready', FROM, { timeout: 20000 });
	const zr = await page.evaluate(() => [window.profd.state.from, window.profd.state.to]);
	check(zr[0] > FROM && zr[1] < TO && zr[1] - zr[0] < (TO - FROM) * 0.45, `dragging on the chart zooms the range to ${new Date(zr[0]).toISOString()} – ${new Date(zr[1]).toISOString()}`);
	await page.goto(pageUrl({ type: CPU, from: FROM, to: TO, groupBy: 'process.executable.name' }));
	await settled(page, 'flame');

	/* Label filter with autocompletion: names, then values, from the labels API. */
	await page.fill('#query-input', '');
	await page.focus('#query-input');
	await page.keyboard.type('{serv');
	await page.waitForSelector('#suggest:not([hidden]) li', { timeout: 5000 });
	const names = await page.$$eval('#suggest li', (l) => l.map((x) => x.textContent));
	check(names.some((n) => n.endsWith('service.name')), 'autocomplete offers label names', names);
	await page.keyboard.press('Enter');
	await page.waitForFunction(() => [...document.querySelectorAll('#suggest li')].some((l) => l.textContent.endsWith('shop')), null, { timeout: 5000 });
	const values = await page.$$eval('#suggest li', (l) => l.map((x) => x.textContent.replace(/^service\.name/, '')));
	const apiValues = await apiGet('api/v1/labels/service.name/values', { type: CPU, from: FROM, to: TO });
	check(JSON.stringify(values) === JSON.stringify(apiValues), `autocomplete offers the label's values from the API (${values.join(', ')})`, { values, apiValues });
	await page.click('#suggest li:has-text("shop")');
	check(await page.inputValue('#query-input') === SHOP, `picked filter ${SHOP}`, await page.inputValue('#query-input'));
	await page.click('#run-button');
	await page.waitForFunction((q) => window.profdFlame.request && window.profdFlame.request.query === q && window.profdFlame.state === 'ready', SHOP, { timeout: 30000 });
	await settled(page, 'chart');
	await shot(page, 'flamegraph');

	/* Flame graph: the hot function is there, hover names it in the type's units. */
	const table = await apiGet('api/v1/table', { type: CPU, query: SHOP, from: FROM, to: TO });
	const hot = table.rows.slice().sort((a, b) => b.self - a.self)[0];
	check(hot.name === 'computePrice', `API's hottest function is the workload's (computePrice), self ${hot.self}`);
	const node = await page.evaluate(() => window.profdFlame.nodes.filter((n) => n.name === 'computePrice').sort((a, b) => b.w - a.w)[0] || null);
	check(!!node, 'flame graph shows computePrice');
	if (node) {
		const box = await page.locator('#flamegraph').boundingBox();
		await page.mouse.move(box.x + node.x + node.w / 2, box.y + node.y + node.h / 2);
		await page.waitForSelector('#tooltip:not([hidden])', { timeout: 5000 });
		const tip = (await page.innerText('#tooltip')).replace(/\s+/g, ' ');
		check(/computePrice/.test(tip) && /Self/.test(tip) && /Total/.test(tip) && /\d+(\.\d+)? s\b/.test(tip) && /%/.test(tip), `tooltip: ${tip}`);
		await page.mouse.move(0, 0);
	}

	/* Search: finds it and shows its share. */
	await page.fill('#search-input', 'computePrice');
	const sr = await page.evaluate(() => ({ ...document.querySelector('#search-result').dataset, text: document.querySelector('#search-result').textContent, marked: window.profdFlame.nodes.filter((n) => n.match).map((n) => n.name) }));
	const hotRow = table.rows.find((r) => r.name === 'computePrice');
	check(+sr.matches === 1 && Math.abs(+sr.share - hotRow.total / table.total) < 1e-9 && sr.marked.every((n) => n === 'computePrice') && sr.marked.length === 2,
		`search finds computePrice: ${sr.text}`, sr);
	await shot(page, 'flamegraph-search');
	await page.fill('#search-input', '');

	/* Reverse: the API's inverted tree, leaves first; back again. */
	await page.check('#invert-toggle');
	await page.waitForFunction(() => window.profdFlame.state === 'ready' && window.profdFlame.request.invert === 'true', null, { timeout: 20000 });
	const inv = await apiGet('api/v1/flamegraph', { type: CPU, query: SHOP, from: FROM, to: TO, invert: 'true' });
	const invShown = await page.evaluate(() => window.profdFlame.nodes.filter((n) => n.depth === 1).map((n) => n.name).sort());
	check(JSON.stringify(invShown) === JSON.stringify(inv.root.children.map((c) => c.name).sort()) && new URL(page.url()).searchParams.get('invert') === '1',
		`reverse shows the leaves first: ${invShown.join(', ')}`);
	await page.uncheck('#invert-toggle');
	await page.waitForFunction(() => window.profdFlame.state === 'ready' && !window.profdFlame.request.invert, null, { timeout: 20000 });

	/* Keyboard: digits switch views, / searches. */
	await page.click('#summary');
	await page.keyboard.press('2');
	check(await page.evaluate(() => window.profd.state.view === 'table' && !document.querySelector('#view-table').hidden), 'key 2 opens the table');
	await page.keyboard.press('1');
	await page.keyboard.press('/');
	check(await page.evaluate(() => window.profd.state.view === 'flame' && document.activeElement.id === 'search-input'), 'key 1 opens the flame graph, / focuses its search');
	await page.keyboard.press('Escape');

	/* Zoom by click, breadcrumb back. */
	const handle = await page.evaluate(() => window.profdFlame.nodes.find((n) => n.name === 'handle'));
	const fbox = await page.locator('#flamegraph').boundingBox();
	await page.mouse.click(fbox.x + handle.x + 5, fbox.y + handle.y + 5);
	const zoomed = await page.evaluate(() => ({ focus: new URL(location.href).searchParams.get('focus'), crumbs: [...document.querySelectorAll('#breadcrumb button, #breadcrumb .current')].map((b) => b.textContent), top: window.profdFlame.nodes.find((n) => n.name === 'handle').w }));
	check(zoomed.focus === 'main;serve;handle' && zoomed.crumbs.join('>') === 'total>main>serve>handle' && zoomed.top > fbox.width * 0.9, 'click zooms into handle; breadcrumb total › main › serve › handle', zoomed);
	await page.keyboard.press('Escape');
	check(await page.evaluate(() => !new URL(location.href).searchParams.get('focus')), 'Esc unzooms');

	/* Table: self/total equal the API's; sorting; a row opens the sandwich and marks the flame graph. */
	await page.click('[data-testid="tab-table"]');
	await settled(page, 'table');
	const rows = await page.$$eval('#top-table tbody tr', (trs) => trs.map((tr) => [tr.dataset.name, +tr.dataset.self, +tr.dataset.total, tr.children[1].textContent, tr.children[3].textContent]));
	const r = rows.find((x) => x[0] === 'computePrice');
	check(r && r[1] === hotRow.self && r[2] === hotRow.total && r[3] === '4.20 s', `table: computePrice self ${r && r[3]} total ${r && r[4]} equal the API's ${hotRow.self}/${hotRow.total} ns`, r);
	const allEqual = table.rows.every((a) => rows.some((x) => x[0] === a.name && x[1] === a.self && x[2] === a.total)) && rows.length === table.rows.length;
	check(allEqual, `table: all ${rows.length} rows equal the API's`);
	await page.click('#top-table th[data-sort="total"]');
	check(await page.$eval('#top-table tbody tr', (tr) => tr.dataset.name) === 'main', 'sorting by total puts main first');
	await shot(page, 'table');
	await page.fill('#table-search', 'price');
	check(JSON.stringify(await page.$$eval('#top-table tbody tr', (t) => t.map((x) => x.dataset.name))) === '["computePrice"]', 'table search keeps computePrice only');
	await page.click('#top-table tbody tr[data-name="computePrice"]');
	await settled(page, 'sandwich');
	const sw = await page.evaluate(() => ({ view: window.profd.state.view, callers: window.profd.views.sandwich.callerNames, marked: window.profdFlame.nodes.filter((n) => n.selected).map((n) => n.name) }));
	const swApi = await apiGet('api/v1/sandwich', { type: CPU, query: SHOP, from: FROM, to: TO, function: 'computePrice' });
	check(sw.view === 'sandwich' && sw.callers.includes('handle') && sw.callers.includes('batch'), `clicking the row opens the sandwich: callers of computePrice ${sw.callers.join(', ')}`, sw);
	check(JSON.stringify(sw.callers) === JSON.stringify(swApi.callers.root.children.map((c) => c.name)), 'sandwich callers equal the API\'s');
	check(sw.marked.length === 2 && sw.marked.every((n) => n === 'computePrice'), 'the selected function is marked in the flame graph', sw.marked);
	await shot(page, 'sandwich');

	/* Flame chart: lanes by executable, zoom by dragging. */
	await page.goto(pageUrl({ type: CPU, from: T0 + 299000, to: T0 + 313000, view: 'flamechart', lanes: 'process.executable.name' }));
	await settled(page, 'flamechart');
	const fc = await page.evaluate(() => ({ lanes: window.profd.views.flamechart.lanes.map((l) => l.labels['process.executable.name']), view: window.profd.views.flamechart.view.slice(), rendered: window.profd.views.flamechart.rendered, names: [...new Set(window.profd.views.flamechart.rects.map((r) => r.name))] }));
	check(fc.lanes.includes('worker') && ['step', 'write', 'compress'].every((n) => fc.names.includes(n)), `flame chart: rows ${fc.lanes.join(', ')}, ${fc.rendered} spans drawn`, fc);
	await shot(page, 'flamechart');
	const cb = await page.locator('#flamechart').boundingBox();
	await page.mouse.move(cb.x + cb.width * 0.2, cb.y + 40);
	await page.mouse.down();
	await page.mouse.move(cb.x + cb.width * 0.5, cb.y + 40, { steps: 5 });
	await page.mouse.up();
	const fv = await page.evaluate(() => window.profd.views.flamechart.view);
	check(fv[1] - fv[0] < (fc.view[1] - fc.view[0]) * 0.5, `dragging zooms the flame chart in time (${((fv[1] - fv[0]) / 1e9).toFixed(2)} s of ${((fc.view[1] - fc.view[0]) / 1e9).toFixed(2)} s)`);

	/* Flame chart rows by a per-sample attribute: thread.name (the worker's
	 * flush/write runs are on thread "io", the rest on "cpu"). */
	await page.goto(pageUrl({ type: CPU, from: T0 + 299000, to: T0 + 313000, view: 'flamechart', lanes: 'thread.name' }));
	await settled(page, 'flamechart');
	const th = await page.evaluate(() => {
		const v = window.profd.views.flamechart;
		const byLane = {};
		for (const r of v.rects) {
			const k = (r.lane && r.lane.labels && r.lane.labels['thread.name']) || '';
			(byLane[k] = byLane[k] || new Set()).add(r.name);
		}
		return { lanes: v.lanes.map((l) => l.labels['thread.name']), names: Object.fromEntries(Object.entries(byLane).map(([k, s]) => [k, [...s]])) };
	});
	const thApi = await apiGet('api/v1/flamechart', { type: CPU, from: T0 + 299000, to: T0 + 313000, group_by: 'thread.name' });
	check(th.lanes.includes('cpu') && th.lanes.includes('io') && JSON.stringify([...th.lanes].sort()) === JSON.stringify(thApi.lanes.map((l) => l.labels['thread.name']).sort()) &&
		(th.names.io || []).includes('write') && !(th.names.io || []).includes('compress') && (th.names.cpu || []).includes('compress'),
		`flame chart rows by thread.name: ${th.lanes.join(', ')} (the API's), write on "io" only`, th);
	await shot(page, 'flamechart-threads');

	/* Compare: A = period A, B = period B. */
	await page.goto(pageUrl({ type: CPU, query: SHOP, from: FROM, to: TO, view: 'compare', a_from: T0, a_to: T0 + 599000, b_from: T0 + 600000, b_to: T0 + 1200000 }));
	await settled(page, 'compare');
	const diffClasses = () => page.evaluate(() => {
		const out = {};
		for (const n of window.profd.views.compare.graph.nodes) out[n.name + '@' + n.depth] = n.diffClass;
		return out;
	});
	let dc = await diffClasses();
	const expectDiff = (d, mode) => check(d['computePrice@4'] === 'more' && d['parseJSON@4'] === 'less' && d['logRequest@3'] === 'same' && d['runtime.gcBgMarkWorker@2'] === 'same' && d['computePrice@3'] === 'same' && d['main@1'] === 'same',
		`compare (${mode}): computePrice under handle red, parseJSON green, logRequest / gcBgMarkWorker / batch's computePrice neutral`, d);
	expectDiff(dc, 'normalized');
	await page.waitForFunction(() => document.querySelectorAll('.cmp-chart canvas').length >= 2, null, { timeout: 10000 }).catch(() => {});
	const sides = await page.evaluate(() => ({
		canvases: document.querySelectorAll('.cmp-chart canvas').length,
		totals: ['a', 'b'].map((s) => window.profd.views.compare.charts[s] && window.profd.views.compare.charts[s].series[0].total),
	}));
	check(sides.canvases >= 2 && sides.totals.every((t) => t === 8400000000), `compare: both sides have their own chart (totals ${sides.totals.join(', ')} ns)`, sides);
	await shot(page, 'compare');
	/* Compare's downloads: each side's selection and the diff, not the main selection. */
	const cx = await page.evaluate(() => {
		const q = (id) => document.getElementById(id);
		const link = (id) => ({ href: q(id).href, download: q(id).download, title: q(id).title, label: q(id).getAttribute('aria-label'), text: q(id).textContent });
		const out = { mainHidden: q('exports').hidden, cmpHidden: q('cmp-exports').hidden, visible: !!q('cmp-exports').offsetParent, diff: link('cmp-export-diff') };
		for (const side of ['a', 'b']) for (const f of ['pprof', 'folded', 'svg']) out[`${side}_${f}`] = link(`cmp-export-${side}-${f}`);
		return out;
	});
	check(cx.mainHidden && !cx.cmpHidden && cx.visible, 'compare: the main Download links give way to the comparison\'s', cx);
	const sideOf = (href) => Object.fromEntries(['type', 'query', 'from', 'to'].map((k) => [k, new URL(href).searchParams.get(k)]));
	const sa = sideOf(cx.a_folded.href);
	const sb = sideOf(cx.b_folded.href);
	check(sa.type === CPU && sa.query === SHOP && +sa.from === T0 && +sa.to === T0 + 599000 && +sb.from === T0 + 600000 && +sb.to === T0 + 1200000 &&
		['pprof', 'svg'].every((f) => JSON.stringify(sideOf(cx[`a_${f}`].href)) === JSON.stringify(sa) && JSON.stringify(sideOf(cx[`b_${f}`].href)) === JSON.stringify(sb)),
	`compare downloads: A's links select A (${sa.from}..${sa.to}), B's select B (${sb.from}..${sb.to})`, { sa, sb });
	check(/^A \(baseline\)/.test(cx.a_pprof.title) && /^B \(comparison\)/.test(cx.b_svg.title) && /^Baseline A/.test(cx.a_folded.label) && /^Comparison B/.test(cx.b_pprof.label) &&
		/B minus A/.test(cx.diff.title) && cx.diff.text.trim() === 'diff JSON' && /\.A\.pb\.gz$/.test(cx.a_pprof.download) && /\.B\.svg$/.test(cx.b_svg.download) && /\.diff\.json$/.test(cx.diff.download),
	`compare downloads say what they export: "${cx.a_pprof.title}", "${cx.diff.title}"`, cx);
	/* 30 profiles per period: computePrice under handle has 4 samples each in A, 8 in B */
	const foldedLine = (text) => (text.match(/^main;serve;handle;computePrice (\d+)$/m) || [])[1];
	const fa = foldedLine(await (await fetch(cx.a_folded.href)).text());
	const fb = foldedLine(await (await fetch(cx.b_folded.href)).text());
	check(+fa === 4 * 30 * 10000000 && +fb === 8 * 30 * 10000000, `compare downloads: folded A has computePrice ${fa} ns, B ${fb} ns (want 1.2e9, 2.4e9)`);
	const asvg = await fetch(cx.a_svg.href);
	const asvgText = await asvg.text();
	const bpb = Buffer.from(await (await fetch(cx.b_pprof.href)).arrayBuffer());
	check(asvg.ok && /<svg/.test(asvgText) && /computePrice/.test(asvgText) && /A \(baseline\)/.test(asvgText) && bpb[0] === 0x1f && bpb[1] === 0x8b,
		'compare downloads: A\'s SVG is a flame graph titled as the baseline, B\'s pprof is gzip');
	const dres = await fetch(cx.diff.href);
	const dj = dres.ok ? await dres.json() : {};
	const shown = await page.evaluate(() => ({ a: window.profd.views.compare.data.a.total, b: window.profd.views.compare.data.b.total, mode: window.profd.views.compare.data.mode }));
	check(dres.ok && dj.root && dj.a.total === shown.a && dj.b.total === shown.b && dj.mode === shown.mode && dj.a.total === 14 * 30 * 10000000,
		`compare downloads: the diff JSON is the view's diff (A ${dj.a && dj.a.total}, B ${dj.b && dj.b.total}, ${dj.mode})`, { dj: dj.a, shown });
	await page.check('[data-testid="cmp-absolute"]');
	await page.waitForFunction(() => window.profd.views.compare.state === 'ready' && window.profd.views.compare.mode === 'absolute', null, { timeout: 20000 });
	dc = await diffClasses();
	expectDiff(dc, 'absolute');
	await page.selectOption('[data-testid="cmp-b-type"]', MEM);
	await page.waitForFunction(() => window.profd.views.compare.state === 'error', null, { timeout: 20000 });
	const words = (await page.innerText('#cmp-message')).replace(/\s+/g, ' ');
	check(/cannot be compared/.test(words) && /nanoseconds/.test(words) && /bytes/.test(words), `mismatched types refused in words: ${words}`);
	const api400 = await fetch(new URL(`api/v1/diff?type=${CPU}&b_type=${MEM}&from=${FROM}&to=${TO}`, base));
	check(api400.status === 400, 'the API refuses the same pair with 400');

	/* Stack health: per binary, the API's shares. */
	await page.goto(pageUrl({ type: CPU, from: FROM, to: TO, view: 'health' }));
	await settled(page, 'health');
	const h = await apiGet('api/v1/health/symbols', { type: CPU, from: FROM, to: TO });
	const hrow = await page.$$eval('#health-table tbody tr[data-path]', (trs) => trs.map((tr) => [tr.dataset.path, tr.children[1].textContent, tr.children[2].textContent, tr.children[5].textContent, tr.children[4].textContent]));
	const lib = h.binaries.find((b) => b.path === '/opt/search/libidx.so');
	check(!!lib && hrow.length === h.binaries.length && hrow[0][0] === h.binaries[0].path && hrow.some((x) => x[0] === lib.path && x[3].startsWith(lib.hint) && lib.hint.length > 10),
		`stack health: ${hrow.map((x) => `${x[0]} ${x[1]} ${x[2]}`).join('; ')} with what would fix it`, { hrow, api: h.binaries });
	/* Unwinding: the indexer's libidx.so is on 60 complete stacks and 60 with a
	 * "[truncated]" root (test_explorer.sh's workload): 50 % fully unwound. */
	check(!!lib && lib.samples === 120 && lib.samples_truncated === 60 && h.samples_truncated === 60,
		`API: libidx.so on ${lib && lib.samples} samples, ${lib && lib.samples_truncated} truncated (want 120, 60)`);
	const librow = hrow.find((x) => x[0] === '/opt/search/libidx.so');
	check(!!librow && /^50\.0%/.test(librow[4]) && /\[truncated\]/.test(librow[3]),
		`stack health shows libidx.so's stacks 50% fully unwound and says why (${librow && librow[4]})`);
	const card = await page.$eval('#health-cards .card .card-value', (c) => c.textContent);
	const wantPct = (100 * h.frames_symbolized) / h.frames;
	check(card === `${wantPct >= 10 ? wantPct.toFixed(1) : wantPct.toFixed(2)}%`, `frames symbolized card ${card} = API ${h.frames_symbolized}/${h.frames}`);
	await shot(page, 'health');

	/* Exports from the current selection. */
	await page.goto(pageUrl({ type: CPU, query: SHOP, from: FROM, to: TO, view: 'flame' }));
	await settled(page, 'flame');
	check(await page.evaluate(() => !document.getElementById('exports').hidden && document.getElementById('cmp-exports').hidden), 'outside Compare the Download links are the selection\'s');
	const hrefs = await page.evaluate(() => ({ pprof: document.querySelector('#export-pprof').href, svg: document.querySelector('#export-svg').href, folded: document.querySelector('#export-folded').href }));
	const folded = await (await fetch(hrefs.folded)).text();
	check(/^main;serve;handle;computePrice \d+$/m.test(folded), 'folded export link: the selection\'s stacks');
	const svg = await fetch(hrefs.svg);
	const svgText = await svg.text();
	check(svg.ok && /<svg/.test(svgText) && /computePrice/.test(svgText), 'SVG export link answers an SVG with the frames');
	const pprof = await fetch(hrefs.pprof);
	const pb = Buffer.from(await pprof.arrayBuffer());
	check(pprof.ok && pb[0] === 0x1f && pb[1] === 0x8b, `pprof export link answers gzip (${pb.length} bytes)`);
	const dl = page.waitForEvent('download', { timeout: 10000 });
	await page.click('#export-speedscope');
	const download = await dl;
	const ssFile = path.join(artifacts, 'profile.speedscope.json');
	await download.saveAs(ssFile);
	const ss = JSON.parse(fs.readFileSync(ssFile, 'utf8'));
	const ssTotal = ss.profiles[0].weights.reduce((a, b) => a + b, 0);
	check(ss.profiles[0].type === 'sampled' && ss.profiles[0].unit === 'nanoseconds' && ssTotal === table.total && ss.shared.frames.some((f) => f.name === 'computePrice'),
		`speedscope download: ${ss.profiles[0].samples.length} stacks, total ${ssTotal} = API ${table.total}`);

	/* A copied link restores type, range, filters, view; the data shown is the same. */
	await page.fill('#chip-input', 'serve');
	await page.click('#chip-add');
	await page.selectOption('#chip-kind', 'frame');
	await page.fill('#chip-input', '^handle$');
	await page.click('#chip-add');
	await page.check('#hide-presets input[value="go"]');
	await page.click('[data-testid="tab-table"]');
	await settled(page, 'table');
	await page.click('#top-table th[data-sort="total"]');
	await page.click('#copy-link');
	const link = await page.evaluate(() => window.profd.copiedLink);
	const before = await page.$$eval('#top-table tbody tr', (t) => t.map((x) => [x.dataset.name, x.dataset.self, x.dataset.total]));
	const filtered = await apiGet('api/v1/table', { type: CPU, query: SHOP, from: FROM, to: TO, stack_filter: 'serve', frame_filter: '^handle$', hide: 'go' });
	check(before.length === filtered.rows.length && before.every((b) => filtered.rows.some((a) => a.name === b[0] && a.self === +b[1] && a.total === +b[2])) &&
		!before.some((b) => b[0] === 'handle' || b[0] === 'runtime.gcBgMarkWorker' || b[0] === 'batch'),
	`view filters (stack ∋ serve, hide ^handle$, hide Go runtime) change the view: ${before.map((b) => b[0]).join(', ')}`, before);
	const page2 = await page.context().newPage();
	await page2.goto(link);
	await settled(page2, 'table');
	const restored = await page2.evaluate(() => {
		const s = window.profd.state;
		return { type: s.type, query: s.query, range: s.range, from: s.from, to: s.to, view: s.view, sf: s.sf, ff: s.ff, hide: s.hide, sort: s.sort, typeSel: document.querySelector('#type-select').value, chips: document.querySelectorAll('#chips .chip').length, activeTab: document.querySelector('#tabs button.active').dataset.view };
	});
	const after = await page2.$$eval('#top-table tbody tr', (t) => t.map((x) => [x.dataset.name, x.dataset.self, x.dataset.total]));
	check(restored.type === CPU && restored.typeSel === CPU && restored.query === SHOP && restored.range === 'abs' && restored.from === FROM && restored.to === TO &&
		restored.view === 'table' && restored.activeTab === 'table' && restored.sf[0] === 'serve' && restored.ff[0] === '^handle$' && restored.hide.join() === 'go' && restored.chips === 2 && restored.sort === 'total',
	'reload with the copied link restores type, range, filters, view and sort', restored);
	check(JSON.stringify(after) === JSON.stringify(before), 'the restored page shows the same rows');
	await page2.close();

	/* Dark theme: every view readable. */
	await page.goto(pageUrl({ type: CPU, query: SHOP, from: FROM, to: TO, groupBy: 'process.executable.name', view: 'flame' }));
	await settled(page, 'flame');
	await page.click('#theme-toggle');
	const dark = await page.evaluate(() => ({ theme: document.documentElement.dataset.theme, bg: getComputedStyle(document.body).backgroundColor, fg: getComputedStyle(document.body).color, nodes: window.profdFlame.nodes.length }));
	const lum = (c) => {
		const m = c.match(/\d+/g).map(Number);
		return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
	};
	check(dark.theme === 'dark' && lum(dark.bg) < 0.15 && lum(dark.fg) > 0.7 && dark.nodes > 5, `dark theme: background ${dark.bg}, text ${dark.fg}`, dark);
	await shot(page, 'dark-flamegraph');
	await page.goto(pageUrl({ type: CPU, query: SHOP, from: FROM, to: TO, view: 'compare', a_from: T0, a_to: T0 + 599000, b_from: T0 + 600000, b_to: T0 + 1200000 }));
	await settled(page, 'compare');
	check(await page.evaluate(() => document.documentElement.dataset.theme) === 'dark', 'the theme choice is kept across pages');
	await shot(page, 'dark-compare');
	await page.click('#theme-toggle');
}

/* ---------------------------------------------------------------- 16 000 nodes */

async function bigProfile(page) {
	const q = '{service.name="big"}';
	const from = T0 + 1790000;
	const to = T0 + 1810000;
	await page.goto(pageUrl({ type: CPU, query: q, from, to, view: 'flame' }));
	await settled(page, 'flame', 60000);
	const m = await page.evaluate(() => {
		const f = window.profdFlame;
		const t = window.profd.timings.flameRenderMs;
		return { nodes: document.querySelector('#summary').textContent, drawn: f.nodes.length, first: t[t.length - 1], load: window.profd.timings.lastFlame };
	});
	/* Render again several times in the page: layout + drawing of the whole tree. */
	const times = await page.evaluate(() => {
		const out = [];
		for (let i = 0; i < 6; i++) {
			window.dispatchEvent(new Event('resize'));
			const t0 = performance.now();
			document.querySelector('#icicle-toggle').click(); /* flips orientation: a full render */
			out.push(performance.now() - t0);
		}
		return out;
	});
	const data = await apiGet('api/v1/flamegraph', { type: CPU, query: q, from, to, max_nodes: 32768 });
	let count = 0;
	const st = [data.root];
	while (st.length) {
		const n = st.pop();
		count++;
		for (const c of n.children) st.push(c);
	}
	check(count >= 16000 && data.truncated.nodes === 0 && /16,42\d frames/.test(m.nodes), `big profile: ${count} nodes served untruncated; page says "${m.nodes}"`);
	/* Hover: move across the leaves' row and the rows above; measure the handler. */
	await page.evaluate(() => (window.profd.timings.hoverMs.length = 0));
	const box = await page.locator('#flamegraph').boundingBox();
	const t0 = Date.now();
	let moves = 0;
	for (let i = 0; i < 120; i++) {
		await page.mouse.move(box.x + 2 + ((box.width - 4) * i) / 120, box.y + 18 * (1 + (i % 3)) + 9);
		moves++;
	}
	const wall = Date.now() - t0;
	const hover = await page.evaluate(() => window.profd.timings.hoverMs.slice());
	const tipShown = await page.evaluate(() => !document.querySelector('#tooltip').hidden);
	hover.sort((a, b) => a - b);
	const avg = hover.reduce((a, b) => a + b, 0) / Math.max(1, hover.length);
	const sorted = times.slice().sort((a, b) => a - b);
	console.log(`measure - 16k-node flame graph (${count} nodes, ${m.drawn} frames wide enough to draw at 1440 px): fetch + JSON ${m.load.fetchMs.toFixed(1)} ms, tree links ${m.load.prepareMs.toFixed(1)} ms, first render ${m.first.toFixed(1)} ms, re-render median ${sorted[sorted.length >> 1].toFixed(1)} ms (max ${sorted[sorted.length - 1].toFixed(1)} ms); hover handler mean ${avg.toFixed(2)} ms, max ${(hover[hover.length - 1] || 0).toFixed(2)} ms over ${hover.length} moves (${moves} moves in ${wall} ms wall)`);
	check(tipShown && hover.length >= 100, 'big flame graph stays responsive to hover (tooltip shown; timings above)');
	/* Colour by package: one colour per package (the part before the function name). */
	await page.selectOption('#color-select', 'package');
	const pk = await page.evaluate(() => window.profdFlame.nodes.filter((n) => n.depth > 1 && n.fill).map((n) => [n.name, n.fill]));
	const pkgOf = (n) => n.slice(0, n.lastIndexOf('.'));
	const byPkg = new Map();
	let consistent = true;
	for (const [n, f] of pk) {
		if (byPkg.has(pkgOf(n)) && byPkg.get(pkgOf(n)) !== f) consistent = false;
		byPkg.set(pkgOf(n), f);
	}
	check(consistent && new Set(pk.map((x) => x[1])).size >= 5 && new URL(page.url()).searchParams.get('color') === 'package',
		`colour by package: ${byPkg.size} packages, ${new Set(pk.map((x) => x[1])).size} colours, the same within a package`);
	await page.click('#flamegraph', { position: { x: 30, y: 2 * 18 + 9 } }); /* zoom into one package's Serve */
	await page.mouse.move(0, 0);
	await shot(page, 'flamegraph-16k');
}

/* ---------------------------------------------------------------- interpreter frames */

async function interpreterFrames(page) {
	const q = '{service.name="pyapp"}';
	const from = T0 + 2390000;
	const to = T0 + 2410000;
	await page.goto(pageUrl({ type: CPU, query: q, from, to, view: 'flame' }));
	await settled(page, 'flame');
	const drawn = () => page.evaluate(() => window.profdFlame.nodes.filter((n) => n.depth > 0).map((n) => ({ name: n.name, depth: n.depth, fill: n.fill })));

	/* Colour by frame type: the Python frames one colour, CPython's native frames another, a legend. */
	await page.selectOption('#color-select', 'frametype');
	const nodes = await drawn();
	const fills = (name) => [...new Set(nodes.filter((n) => n.name === name).map((n) => n.fill))];
	const py = [...fills('work_a'), ...fills('spin')];
	const nat = [...fills('_PyEval_EvalFrameDefault'), ...fills('PyObject_Malloc'), ...fills('main')];
	const legend = await page.evaluate(() => ({
		shown: !document.querySelector('#ft-legend').hidden,
		items: [...document.querySelectorAll('#ft-legend .ft-item')].map((x) => x.dataset.type),
	}));
	check(py.length === 2 && py[0] === py[1] && new Set(nat).size === 1 && nat[0] !== py[0] &&
		legend.shown && legend.items.includes('cpython') && legend.items.includes('native') &&
		new URL(page.url()).searchParams.get('color') === 'frametype',
	`colour by frame type: cpython frames ${py[0]}, native frames ${nat[0]}, legend ${legend.items.join(', ')}`, { py, nat, legend });
	await shot(page, 'flamegraph-frametype');

	/* Hide Python internals: the checkbox sets hide=python, the graph keeps work_a -> spin at the root. */
	await page.check('#hide-presets input[value="python"]');
	let hidden = true;
	try {
		await page.waitForFunction(() => new URL(location.href).searchParams.get('hide') === 'python' && window.profd.views.flame.state === 'ready' &&
			!window.profdFlame.nodes.some((n) => n.name === '_PyEval_EvalFrameDefault'), null, { timeout: 15000 });
	} catch {
		hidden = false;
	}
	const after = await drawn();
	const api = await apiGet('api/v1/flamegraph', { type: CPU, query: q, from, to, hide: 'python' });
	const top = api.root.children.map((c) => c.name);
	check(hidden && after.some((n) => n.name === 'work_a' && n.depth === 1) && after.some((n) => n.name === 'spin' && n.depth === 2) &&
		!after.some((n) => /^(main|Py_RunMain|_PyEval_|_PyObject_|PyObject_)/.test(n.name)) && top.join() === 'work_a' && api.root.children[0].total === api.total,
	`hide Python internals: hide=python in the URL, the graph is ${after.map((n) => n.name).join(', ')} (API root: ${top.join(', ')})`, { after, top });
	await page.uncheck('#hide-presets input[value="python"]');
	await page.selectOption('#color-select', 'hot');
}

/* ---------------------------------------------------------------- corpus */

async function corpus(page) {
	const from = corpusFrom;
	const to = corpusFrom + 600000;
	const fn = 'crypto/sha256.block';
	await page.goto(pageUrl({ type: CPU, from, to, view: 'flame' }));
	await settled(page, 'flame');
	const shown = await page.evaluate((f) => window.profdFlame.nodes.some((n) => n.name === f), fn);
	check(shown, `corpus gen--cpu.pprof: the flame graph shows ${fn}`);
	await page.fill('#search-input', 'sha256.block');
	const share = +(await page.$eval('#search-result', (e) => e.dataset.share));
	/* MANIFEST.md: crypto/sha256.block flat = cum = 3320000000 ns of 10060000000 ns */
	check(Math.abs(share - 3320000000 / 10060000000) < 1e-9, `corpus: search share ${(100 * share).toFixed(2)}% = 3.32 s of 10.06 s (manifest)`);
	await page.click('[data-testid="tab-table"]');
	await settled(page, 'table');
	const row = await page.$eval(`#top-table tbody tr[data-name="${fn}"]`, (tr) => [+tr.dataset.self, +tr.dataset.total]);
	const api = await apiGet('api/v1/table', { type: CPU, from, to, search: fn });
	const arow = api.rows.find((r) => r.name === fn);
	check(row[0] === 3320000000 && row[1] === 3320000000 && arow.self === row[0] && arow.total === row[1], `corpus: table self/total ${row.join('/')} = manifest's flat/cum = API's`);
	await page.click(`#top-table tbody tr[data-name="${fn}"]`);
	await settled(page, 'sandwich');
	const callers = await page.evaluate(() => window.profd.views.sandwich.callerNames);
	/* Go's crypto/sha256 calls block() from (*digest).Write (and checkSum). */
	check(callers.includes('crypto/sha256.(*digest).Write'), `corpus: sandwich callers of ${fn}: ${callers.join(', ')}`);
	await shot(page, 'corpus-sandwich');
}

/* ---------------------------------------------------------------- states */

async function states(page) {
	await page.goto(pageUrl({ type: CPU, from: 1000, to: 2000, view: 'flame' }));
	await settled(page, 'flame');
	const empty = await page.evaluate(() => ({ state: window.profdFlame.state, msg: document.querySelector('#message').innerText }));
	check(empty.state === 'empty' && /No samples/.test(empty.msg) && /widen the time range/.test(empty.msg), `empty state in words: ${empty.msg.replace(/\s+/g, ' ')}`);
	await page.goto(pageUrl({ type: CPU, query: '{service.name=', from: FROM, to: TO, view: 'table' }));
	await settled(page, 'table');
	const err = await page.evaluate(() => ({ state: window.profd.views.table.state, msg: document.querySelector('#table-message').innerText }));
	check(err.state === 'error' && /400/.test(err.msg) && /query|selector/i.test(err.msg), `error state in words: ${err.msg.replace(/\s+/g, ' ')}`);
	await shot(page, 'error');
}

main()
	.catch((e) => {
		failures++;
		console.log(`FAIL - ${e.message.split('\n')[0]}`);
	})
	.finally(() => {
		console.log(failures ? `FAIL - ${failures} check(s) failed` : 'ok - all explorer checks passed');
		process.exitCode = failures ? 1 : 0;
	});
