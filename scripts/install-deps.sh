#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what profd needs to build, run and test on Debian 12 (as root).
# Idempotent: packages already present are skipped, so `make run` and
# `make test` can call it every time at little cost.
set -euo pipefail

PKGS=(build-essential pkg-config clang llvm libbpf-dev bpftool libelf-dev libdw-dev
	libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libisal-dev libzstd-dev libmicrohttpd-dev libgnutls28-dev
	libnghttp2-dev libcurl4-openssl-dev libjansson-dev libyaml-dev libpcre2-dev
	libxxhash-dev libiberty-dev libdebuginfod-dev elfutils libcmocka-dev libclang-rt-14-dev golang-go nodejs npm chromium
	linux-perf curl ca-certificates openssl python3 python3.11 ruby3.1 php8.2-cli clang-format strace
	libcurl3-gnutls podman runc clickhouse-server clickhouse-client zookeeper)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
# Node and npm may come from outside Debian's packages; accept any working pair.
if command -v node >/dev/null && command -v npm >/dev/null; then
	tmp=()
	for p in "${missing[@]}"; do
		[ "$p" = nodejs ] || [ "$p" = npm ] || tmp+=("$p")
	done
	missing=("${tmp[@]+"${tmp[@]}"}")
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Node packages for the tests (independent decoders, browser driver).
here=$(cd "$(dirname "$0")/.." && pwd)
# Also when package-lock.json changed since the last install (new test deps).
js=$here/tests/js
if [ -f "$js/package.json" ] && { [ ! -d "$js/node_modules" ] ||
	[ "$js/package-lock.json" -nt "$js/node_modules/.package-lock.json" ]; }; then
	(cd "$js" && npm ci --no-audit --no-fund --silent)
fi

# The explorer's npm packages (uPlot), copied into ui/vendor/.
bash "$here/scripts/build-ui.sh"
