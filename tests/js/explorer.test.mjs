// SPDX-License-Identifier: Apache-2.0
/*
 * explorer.test.mjs - drives Debian's chromium (playwright-core) through the
 * Profiling Explorer served by a running `profd server`:
 * open the page, pick a profile type, enter a selector, run, and check that
 * a given function is among the rendered flame graph frames and that
 * hovering it shows a tooltip naming it. Saves tests/artifacts/explorer.png.
 *
 * Environment:
 *   PROFD_URL               explorer URL (default http://127.0.0.1:4040/)
 *   PROFD_TYPE              profile type id to pick (default: the page's choice)
 *   PROFD_QUERY             label selector to enter (default: empty)
 *   PROFD_EXPECT_FUNCTION   function that must appear (required)
 *   PROFD_GROUP_BY          optional: "Sum by" this label; the chart legend must
 *                           list its groups
 *   PROFD_EXPECT_CALLER     optional: the table's row for the function must
 *                           equal the API's, and a click on it must open the
 *                           sandwich with this caller
 *   PROFD_TIMEOUT_MS        how long to wait for data to show up (default 60000)
 *   CHROMIUM                browser binary (default /usr/bin/chromium)
 *   PROFD_ARTIFACTS         screenshot folder (default tests/artifacts)
 *
 * Prints "ok ..." lines and exits 0, or prints "FAIL: reason" and exits 1.
 */
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const url = process.env.PROFD_URL || 'http://127.0.0.1:4040/';
const wantType = process.env.PROFD_TYPE || '';
const query = process.env.PROFD_QUERY || '';
const expectFn = process.env.PROFD_EXPECT_FUNCTION || '';
const timeoutMs = +(process.env.PROFD_TIMEOUT_MS || 60000);
const groupBy = process.env.PROFD_GROUP_BY || '';
const expectCaller = process.env.PROFD_EXPECT_CALLER || '';
const artifacts = path.resolve(root, process.env.PROFD_ARTIFACTS || 'tests/artifacts');
const shot = path.join(artifacts, 'explorer.png');

function fail(msg) {
	console.log(`FAIL: ${msg}`);
	process.exitCode = 1;
	throw new Error(msg);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
	if (!expectFn) fail('set PROFD_EXPECT_FUNCTION to the function the flame graph must show');
	fs.mkdirSync(artifacts, { recursive: true });
	const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'profd-chromium-'));
	const context = await chromium.launchPersistentContext(profileDir, {
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: [
			'--headless',
			'--no-sandbox',
			'--disable-gpu',
			'--disable-quic',
			'--no-first-run',
			'--disable-background-networking',
			'--disable-component-update',
			'--disable-sync',
		],
		viewport: { width: 1440, height: 900 },
	});
	const pageErrors = [];
	try {
		const page = context.pages()[0] || (await context.newPage());
		page.on('pageerror', (e) => pageErrors.push(String(e)));
		page.on('console', (m) => {
			/* A failed request is reported by the page in words; only script errors count here. */
			if (m.type() === 'error' && !/Failed to load resource/.test(m.text()))
				pageErrors.push(`console: ${m.text()}`);
		});

		const deadline = Date.now() + timeoutMs;
		let type = '';
		/* The type list is read when the page loads: reload until the wanted type exists. */
		for (;;) {
			/* A bare visit lands on the service overview: ask for the flame graph. */
			await page.goto(url.includes('?') ? url : `${url}?view=flame`, { waitUntil: 'domcontentloaded' });
			await page.waitForFunction(() => {
				const s = document.querySelector('#type-select');
				return s && s.options.length > 0 && window.profdFlame && window.profdFlame.state !== 'idle';
			}, null, { timeout: 20000 });
			const options = await page.$$eval('#type-select option', (os) => os.map((o) => o.value).filter(Boolean));
			if (wantType ? options.includes(wantType) : options.length > 0) {
				type = wantType || (await page.inputValue('#type-select')) || options[0];
				break;
			}
			if (Date.now() > deadline)
				fail(`profile type ${wantType || '(any)'} never appeared; the page offers: ${options.join(', ') || 'nothing'}`);
			await sleep(2000);
		}
		await page.selectOption('#type-select', type);
		console.log(`ok picked profile type ${type}`);
		await page.fill('#query-input', query);

		/* Run until the flame graph for exactly this request is drawn and has the function. */
		let found = null;
		let last = null;
		for (;;) {
			await page.click('#run-button');
			await page.waitForFunction(
				([t, q]) => {
					const f = window.profdFlame;
					return f && f.request && f.request.type === t && f.request.query === q &&
						['ready', 'empty', 'error'].includes(f.state);
				},
				[type, query.trim()],
				{ timeout: 30000 },
			);
			last = await page.evaluate(() => ({
				state: window.profdFlame.state,
				total: window.profdFlame.total,
				message: document.querySelector('#message').innerText,
				names: window.profdFlame.nodes.map((n) => n.name),
			}));
			if (last.state === 'ready') {
				found = await page.evaluate((name) => {
					const nodes = window.profdFlame.nodes.filter((n) => n.name === name);
					nodes.sort((a, b) => b.w - a.w);
					return nodes[0] || null;
				}, expectFn);
				if (found) break;
			}
			if (Date.now() > deadline) break;
			await sleep(2000);
		}
		if (!found) {
			await page.screenshot({ path: shot, fullPage: true });
			if (last && last.state !== 'ready')
				fail(`flame graph state ${last && last.state}: ${last && last.message.replace(/\s+/g, ' ')}`);
			fail(`function ${expectFn} is not among the ${last.names.length} rendered frames (${last.names.slice(0, 30).join(', ')}...)`);
		}
		console.log(`ok flame graph shows ${expectFn}: total ${found.total} of ${last.total} (${((100 * found.total) / last.total).toFixed(1)}%), ${last.names.length} frames drawn`);

		/* Hover the middle of its widest frame: the tooltip must name it. */
		const box = await page.locator('#flamegraph').boundingBox();
		await page.mouse.move(box.x + found.x + Math.min(found.w / 2, 200), box.y + found.y + found.h / 2);
		await page.waitForSelector('#tooltip:not([hidden])', { timeout: 5000 });
		const tip = await page.innerText('#tooltip');
		if (!tip.includes(expectFn)) fail(`tooltip does not name ${expectFn}: ${tip.replace(/\s+/g, ' ')}`);
		if (!/Self/.test(tip) || !/Total/.test(tip) || !/%/.test(tip)) fail(`tooltip lacks self/total/share: ${tip}`);
		console.log(`ok tooltip: ${tip.replace(/\s+/g, ' ').trim()}`);

		/* The URL carries the state, so a reload restores it. */
		const u = new URL(page.url());
		if (u.searchParams.get('type') !== type || (u.searchParams.get('query') || '') !== query.trim())
			fail(`URL does not hold the state: ${page.url()}`);
		console.log('ok URL holds type and query');

		await page.screenshot({ path: shot, fullPage: true });
		console.log(`ok screenshot ${path.relative(root, shot)}`);

		if (groupBy) {
			await page.waitForFunction((g) => [...document.querySelectorAll('#groupby-select option')].some((o) => o.value === g), groupBy, { timeout: 20000 });
			await page.selectOption('#groupby-select', groupBy);
			await page.waitForFunction((g) => window.profd.state.groupBy === g && window.profd.views.chart.state === 'ready' &&
				document.querySelectorAll('#legend li').length > 0, groupBy, { timeout: 30000 });
			const legend = await page.$$eval('#legend li', (lis) => lis.map((li) => `${li.dataset.label} ${li.querySelector('.lg-total').textContent}`));
			if (!legend.every((l) => l.startsWith(`${groupBy}=`))) fail(`legend is not summed by ${groupBy}: ${legend.join(', ')}`);
			console.log(`ok chart summed by ${groupBy}: ${legend.join(', ')}`);
		}
		if (expectCaller) {
			await page.click('[data-testid="tab-table"]');
			await page.waitForFunction(() => ['ready', 'empty', 'error'].includes(window.profd.views.table.state), null, { timeout: 30000 });
			const row = await page.$eval(`#top-table tbody tr[data-name="${expectFn}"]`, (tr) => ({ self: +tr.dataset.self, total: +tr.dataset.total })).catch(() => null);
			if (!row) fail(`the table has no row for ${expectFn}`);
			const req = await page.evaluate(() => window.profdFlame.request);
			const u = new URL('api/v1/table', url);
			for (const k of ['type', 'query', 'from', 'to']) u.searchParams.set(k, req[k]);
			const api = await (await fetch(u)).json();
			const arow = api.rows.find((r) => r.name === expectFn);
			if (!arow || arow.self !== row.self || arow.total !== row.total)
				fail(`table row for ${expectFn} ${JSON.stringify(row)} differs from the API's ${JSON.stringify(arow)}`);
			console.log(`ok table row for ${expectFn}: self ${row.self}, total ${row.total}, equal to the API's`);
			await page.click(`#top-table tbody tr[data-name="${expectFn}"]`);
			await page.waitForFunction(() => ['ready', 'empty', 'error'].includes(window.profd.views.sandwich.state), null, { timeout: 30000 });
			const callers = await page.evaluate(() => window.profd.views.sandwich.callerNames || []);
			if (!callers.includes(expectCaller)) fail(`sandwich callers of ${expectFn} lack ${expectCaller}: ${callers.join(', ')}`);
			console.log(`ok sandwich: ${expectCaller} calls ${expectFn} (callers: ${callers.join(', ')})`);
			await page.screenshot({ path: path.join(artifacts, 'explorer-sandwich.png'), fullPage: true });
		}
		if (pageErrors.length) fail(`page errors: ${pageErrors.join(' | ')}`);
	} finally {
		await context.close();
		fs.rmSync(profileDir, { recursive: true, force: true });
	}
}

main().catch((e) => {
	if (!process.exitCode) console.log(`FAIL: ${e.message}`);
	process.exitCode = 1;
});
