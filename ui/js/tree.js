// SPDX-License-Identifier: Apache-2.0
/*
 * tree.js - the call trees the API answers (flame graph, sandwich,
 * diff): parent links, depths, paths. Pure, iterative (no recursion over
 * depth: the server serves 30 000-deep stacks).
 */

/* Add parent and depth links; keep the API's order (heaviest first). Returns the node count. */
export function prepare(root, frameTypes) {
	const fts = Array.isArray(frameTypes) ? frameTypes : null;
	let count = 0;
	const stack = [[root, null, 0]];
	let maxDepth = 0;
	while (stack.length) {
		const [n, parent, depth] = stack.pop();
		n.parent = parent;
		n.depth = depth;
		if (depth > maxDepth) maxDepth = depth;
		n.self = +n.self || 0;
		n.total = +n.total || 0;
		n.name = n.name == null ? '' : String(n.name);
		n.frameType = fts && Number.isInteger(n.ft) && fts[n.ft] != null ? String(fts[n.ft]) : '';
		n.children = Array.isArray(n.children) ? n.children : [];
		count++;
		for (const c of n.children) stack.push([c, n, depth + 1]);
	}
	root.nodeCount = count;
	root.maxDepth = maxDepth;
	return count;
}

/* The names from the root's child down to @node. */
export function pathOf(node) {
	const p = [];
	for (let n = node; n && n.parent; n = n.parent) p.push(n.name);
	return p.reverse();
}

export function nodeAtPath(root, names) {
	let n = root;
	for (const name of names) {
		const c = n.children.find((x) => x.name === name);
		if (!c) return null;
		n = c;
	}
	return n;
}

/* Every node of the tree, depth first (the root included). */
export function* walk(root) {
	const stack = [root];
	while (stack.length) {
		const n = stack.pop();
		yield n;
		for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]);
	}
}

/* A regex that matches exactly @name (for stack_filter / frame_filter chips). */
export function exactRegex(name) {
	return `^${String(name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}
