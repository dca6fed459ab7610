# SPDX-License-Identifier: Apache-2.0
# results_lib.sh - sourced by benches that own one section of a shared
# bench/results/*.md page:
#
#   write_section FILE NAME SECTION [HEAD]
#       replaces the part of FILE between `<!-- NAME: begin` and
#       `<!-- NAME: end -->` by SECTION (which carries both markers), or
#       appends SECTION when FILE has no such part; a FILE that does not
#       exist starts as HEAD (default "# NAME"). Text outside the markers,
#       the page's prose, is kept.
write_section() {
	python3 - "$1" "$2" "$3" "${4:-# $2}" <<'PY'
import os, re, sys
path, name, section, head = sys.argv[1:]
old = open(path).read() if os.path.exists(path) else head + "\n"
pat = re.compile(r"<!-- " + re.escape(name) + r": begin.*?<!-- " + re.escape(name) + r": end -->", re.S)
new = pat.sub(lambda _: section, old) if pat.search(old) else old.rstrip() + "\n\n" + section + "\n"
open(path, "w").write(new)
PY
	echo "wrote $1"
}
