#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# image.sh - build the profd container image (make image) from what this
# Debian machine has: build/profd, every shared library it links or
# loads at run time (libcurl, GnuTLS, libmicrohttpd are dlopen'd) with
# their own dependencies (the ldd closure), the explorer (ui/), CA
# certificates, and an /etc/passwd with the unprivileged user profd
# (uid 10001), the image's default user. No base image, no registry: the
# root file system is assembled in a temporary folder and imported with
# `podman import`. One image for both roles:
#   podman run -v profd.yaml:/etc/profd/profd.yaml:ro IMAGE   (the server)
#   podman run --user 0 --pid=host --privileged IMAGE agent --server URL
# Environment: IMAGE (name, default localhost/profd:latest), PROFD_BIN
# (default build/profd). Prints the image's size and its file list to
# build/image-contents.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-localhost/profd:latest}
BIN=${PROFD_BIN:-build/profd}
command -v podman >/dev/null || { echo "image: podman is not installed (make deps)" >&2; exit 1; }
[ -x "$BIN" ] || { echo "image: $BIN is missing (make build)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# place FILE: copy FILE (symlinks resolved) to the same path under the root
place() {
	local f=$1
	[ -e "$root$f" ] && return 0
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
}
# closure FILE: FILE and every library ldd resolves for it
closure() {
	place "$1"
	ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' |
		while read -r lib; do place "$lib"; done
}
mkdir -p "$root/usr/bin"
cp "$BIN" "$root/usr/bin/profd"
strip --strip-debug "$root/usr/bin/profd" 2>/dev/null || true
closure "$BIN"
# loaded with dlopen (base/curl_dl.c, gnutls_dl.c, mhd_dl.c; debuginfod
# is optional and left out). One libcurl: the GnuTLS build, which shares
# GnuTLS with the server, else the OpenSSL one.
so() { ldconfig -p | awk -v n="$1" '$1 == n { print $NF; exit }'; }
curl=$(so libcurl-gnutls.so.4)
[ -n "$curl" ] || curl=$(so libcurl.so.4)
for lib in "$curl" "$(so libgnutls.so.30)" "$(so libmicrohttpd.so.12)"; do
	[ -n "$lib" ] && closure "$lib"
done
# glibc's name service for getaddrinfo ("localhost", service names)
for f in /etc/ssl/certs/ca-certificates.crt /etc/services /etc/protocols; do
	[ -f "$f" ] && place "$f"
done
mkdir -p "$root/etc" "$root/usr/share/profd" "$root/data" "$root/tmp"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/usr/bin/profd\nprofd:x:10001:10001:profd:/data:/usr/bin/profd\n' >"$root/etc/passwd"
printf 'root:x:0:\nprofd:x:10001:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
cp -r ui "$root/usr/share/profd/ui"
rm -rf "$root/usr/share/profd/ui/node_modules" "$root/usr/share/profd/ui/.npm-install.lock"
chown -R 10001:10001 "$root/data"

version=$(git describe --always --dirty 2>/dev/null || echo unknown)
tar -C "$root" -cf "$root.tar" .
podman import -q \
	--change 'ENTRYPOINT ["/usr/bin/profd"]' \
	--change 'CMD ["server", "--listen", "0.0.0.0:4040", "--data", "/data", "--ui", "/usr/share/profd/ui", "--config", "/etc/profd/profd.yaml"]' \
	--change 'USER 10001' \
	--change 'WORKDIR /data' \
	--change 'VOLUME /data' \
	--change 'EXPOSE 4040' --change 'EXPOSE 4317' --change 'EXPOSE 4318' \
	--change "LABEL org.opencontainers.image.title=profd org.opencontainers.image.revision=$version" \
	"$root.tar" "$IMAGE" >/dev/null
rm -f "$root.tar"
mkdir -p build
{
	echo "# $IMAGE ($version): $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
	(cd "$root" && find . -type f -not -path './usr/share/profd/ui/*' | sort | sed 's|^\.||')
	echo "/usr/share/profd/ui/ ($(find "$root/usr/share/profd/ui" -type f | wc -l) files)"
} >build/image-contents.txt
echo "image: $IMAGE, $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes; contents in build/image-contents.txt"
