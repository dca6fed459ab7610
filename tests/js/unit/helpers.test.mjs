// SPDX-License-Identifier: Apache-2.0
// helpers.test.mjs - ui/js tree.js, query.js, timesplit.js, color.js, api.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { exactRegex, nodeAtPath, pathOf, prepare, walk } from '../../../ui/js/tree.js';
import { addMatchers, matchWord, queryKind, quoteValue } from '../../../ui/js/query.js';
import { halves, splitByMass } from '../../../ui/js/timesplit.js';
import { frameColor, hotColor, mix, packageOf } from '../../../ui/js/color.js';
import { Slot, apiUrl, errorWords } from '../../../ui/js/api.js';

const tree = () => ({ name: 'total', total: 10, children: [{ name: 'main', total: 10, ft: 0, children: [{ name: 'a', total: 6 }, { name: 'b', total: 4, children: [{ name: 'c', total: 4 }] }] }] });

test('trees: links, paths, walk order', () => {
	const r = tree();
	assert.equal(prepare(r, ['native']), 5);
	assert.equal(r.maxDepth, 3);
	const c = nodeAtPath(r, ['main', 'b', 'c']);
	assert.equal(c.depth, 3);
	assert.deepEqual(pathOf(c), ['main', 'b', 'c']);
	assert.equal(r.children[0].frameType, 'native');
	assert.equal(nodeAtPath(r, ['main', 'x']), null);
	assert.deepEqual([...walk(r)].map((n) => n.name), ['total', 'main', 'a', 'b', 'c']);
	assert.ok(new RegExp(exactRegex('a.b(c)')).test('a.b(c)'));
	assert.ok(!new RegExp(exactRegex('a.b')).test('axb'));
});

test('a deep tree is prepared without recursion', () => {
	const root = { name: 'total', total: 1, children: [] };
	let n = root;
	for (let i = 0; i < 50000; i++) {
		const c = { name: `f${i}`, total: 1, children: [] };
		n.children.push(c);
		n = c;
	}
	assert.equal(prepare(root), 50001);
	assert.equal(root.maxDepth, 50000);
});

test('the query bar: selector, empty, bare word', () => {
	assert.equal(queryKind(''), 'empty');
	assert.equal(queryKind(' {} '), 'empty');
	assert.equal(queryKind('{service.name="x"}'), 'selector');
	assert.equal(queryKind('checkout'), 'word');
	assert.equal(quoteValue('a"b\\'), '"a\\"b\\\\"');
	assert.equal(addMatchers('', { a: '1' }), '{a="1"}');
	assert.equal(addMatchers('{b="2"}', { a: '1' }), '{b="2", a="1"}');
	assert.equal(addMatchers('{b="2", }', { a: '1' }), '{b="2", a="1"}');
	assert.deepEqual(matchWord(['checkoutd', 'my-checkout', 'cart'], 'CHECK'), ['checkoutd', 'my-checkout']);
	assert.deepEqual(matchWord(['xcheck', 'check'], 'check'), ['check', 'xcheck'], 'prefix matches first');
});

test('compare defaults split where the data is', () => {
	/* data in steps 2..3 and 8..9 of 0..11: A gets the first burst, B the second */
	const ts = [...Array(12).keys()].map((i) => i * 1000);
	const v = [0, 0, 5, 5, 0, 0, 0, 0, 5, 5, 0, 0];
	const s = splitByMass(ts, v, 1000, 0, 11999);
	assert.deepEqual(s, { aFrom: 2000, aTo: 3999, bFrom: 4000, bTo: 9999 });
	/* the halves of this range would leave A empty: data only late */
	const late = [0, 0, 0, 0, 0, 0, 0, 0, 1, 9, 1, 0];
	const t = splitByMass(ts, late, 1000, 0, 11999);
	assert.ok(t.aFrom <= 8000 && t.aTo >= 8000 && t.bFrom <= 10000 && t.bTo >= 10000 && t.aTo < t.bFrom, JSON.stringify(t));
	assert.equal(splitByMass(ts, [0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0], 1000, 0, 11999), null, 'one step: nothing to split');
	assert.deepEqual(halves(0, 100), { aFrom: 0, aTo: 49, bFrom: 50, bTo: 100 });
});

test('colours are stable per name, package, type', () => {
	assert.equal(hotColor('main'), hotColor('main'));
	assert.equal(packageOf('crypto/sha256.block'), 'crypto/sha256');
	assert.equal(packageOf('com.acme.Cart.add'), 'com.acme.Cart');
	assert.equal(packageOf('std::vector<int>::push_back'), 'std::vector<int>');
	assert.equal(packageOf('libc.so.6+0x1234'), 'libc.so.6');
	assert.equal(frameColor('package', 'a/b.f'), frameColor('package', 'a/b.g'));
	assert.equal(frameColor('frametype', 'x', 'cpython'), frameColor('frametype', 'y', 'cpython'));
	assert.equal(mix('#000000', '#ffffff', 1), 'rgb(255,255,255)');
	assert.equal(mix('#000000', '#ffffff', 0), 'rgb(89,89,89)');
});

test('API client: URLs, error words, superseded requests', () => {
	const u = apiUrl('api/v1/table', { type: 'T', query: '', stack_filter: ['a', 'b'], limit: 3 }, 'http://h:1/');
	assert.equal(u.toString(), 'http://h:1/api/v1/table?type=T&stack_filter=a&stack_filter=b&limit=3');
	assert.equal(errorWords(400, '{"error":"parameter \'query\': bad"}'), "The server answered 400: parameter 'query': bad");
	assert.match(errorWords(403, 'no'), /needs a token/);
	const slot = new Slot();
	const a = slot.begin();
	const b = slot.begin();
	assert.ok(a.signal.aborted && !a.current, 'the older request is aborted and no longer current');
	assert.ok(!b.signal.aborted && b.current);
	slot.cancel();
	assert.ok(b.signal.aborted && !b.current);
});

test('series: rates for cumulative types, gauges as the mean of their snapshots', async () => {
	const { gaugeMean, seriesGroups } = await import('../../../ui/js/series.js');
	assert.equal(gaugeMean([0, 0, 4096, 0]), 4096);
	assert.equal(gaugeMean([2, 0, 4]), 3);
	assert.equal(gaugeMean([]), 0);
	const cpu = seriesGroups({ cumulative: true, group_by: ['s'], series: [{ labels: { s: 'a' }, total: 30, values: [10, 20], rates: [1, 2] }], other: { groups: 2, values: [1, 1], rates: [0.1, 0.1] } });
	assert.deepEqual(cpu.map((g) => [g.label, g.values, g.total, g.mean]), [['s=a', [1, 2], 30, false], ['other (2 groups)', [0.1, 0.1], 2, false]]);
	const heap = seriesGroups({ cumulative: false, group_by: [], series: [{ labels: {}, mean: 18.5, values: [0, 4096, 0] }] });
	assert.deepEqual(heap.map((g) => [g.label, g.values, g.total, g.mean]), [['total', [0, 4096, 0], 4096, true]]);
});
