#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts the explorer's third-party files in place: installs ui/package.json's
# npm packages (uPlot) into ui/node_modules when they are missing or the
# lock file changed, and copies the files the page loads into ui/vendor/
# (git-ignored). Run by `make` (build) and scripts/install-deps.sh; cheap
# when nothing changed. Without npm and without a previous install it
# warns and leaves the page without its chart (the views still work).
set -euo pipefail
ui=$(cd "$(dirname "$0")/../ui" && pwd)
need=("uplot/dist/uPlot.iife.min.js" "uplot/dist/uPlot.min.css")

installed() {
	for f in "${need[@]}"; do [ -f "$ui/node_modules/$f" ] || return 1; done
	[ ! "$ui/package-lock.json" -nt "$ui/node_modules/.package-lock.json" ]
}

if ! installed; then
	if command -v npm >/dev/null 2>&1; then
		# One installer at a time when several builds start together.
		exec 9>"$ui/.npm-install.lock"
		flock 9
		if ! installed && ! (cd "$ui" && npm ci --no-audit --no-fund --silent --prefer-offline); then
			echo "build-ui: npm ci failed in ui/; the explorer's chart (uPlot) is missing" >&2
			exit 0
		fi
		flock -u 9
	else
		echo "build-ui: npm is not installed; the explorer's chart (uPlot) is missing (run make deps)" >&2
		exit 0
	fi
fi
mkdir -p "$ui/vendor"
for f in "${need[@]}"; do
	dst=$ui/vendor/$(basename "$f")
	if ! cmp -s "$ui/node_modules/$f" "$dst" 2>/dev/null; then
		cp "$ui/node_modules/$f" "$dst.tmp.$$"
		mv -f "$dst.tmp.$$" "$dst"
	fi
done
