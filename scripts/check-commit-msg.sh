#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check-commit-msg.sh - the commit message convention of CONTRIBUTING.md:
#   - a subject line of at most 72 characters, "area: what changed" (one
#     or more areas, comma-separated: "store: ...", "fuzz, tests: ..."),
#     the verb in the imperative ("add", not "added" / "adds"), no final
#     period;
#   - then a blank line and a body (the why, the figures, the tests).
# Git's own subjects ("Merge ...", "Revert ...") and fixup!/squash!/amend!
# commits are let through.
#
# Usage:
#   check-commit-msg.sh FILE         check one message file (what git passes
#                                    a commit-msg hook; `make hooks`
#                                    installs this script as one)
#   check-commit-msg.sh --new [REV]  check every commit in BASE..REV (REV
#                                    default HEAD), BASE being the commit in
#                                    scripts/commit-msg-base: the history
#                                    before it was written before the rule
#                                    (`make test` runs this). Outside a git
#                                    clone, or in a shallow one, it says
#                                    "skip: ..." and exits 0.
# Exit status: 0 all good, 1 a message breaks the convention (each problem
# is printed), 2 usage.
set -uo pipefail

MAX_SUBJECT=72

# check_msg NAME: the message on stdin; prints NAME: PROBLEM lines, returns 1 if any.
check_msg() {
	local name=$1 msg subject second body bad=0 word
	# What git keeps of a message (cleanup=strip): no comment lines, nothing
	# below a scissors line, no trailing blank lines.
	msg=$(sed -e '/^# -\{24\} >8 -\{24\}$/,$d' -e '/^#/d' | sed -e 's/[[:space:]]*$//')
	subject=$(printf '%s\n' "$msg" | sed -n 1p)
	second=$(printf '%s\n' "$msg" | sed -n 2p)
	body=$(printf '%s\n' "$msg" | sed -n '3,$p' | grep -v '^[[:space:]]*$' | head -n 1)
	case $subject in
	"Merge "* | "Revert "* | "fixup! "* | "squash! "* | "amend! "*) return 0 ;;
	esac
	problem() {
		echo "$name: $*"
		bad=1
	}
	if [ -z "$subject" ]; then
		problem "empty message"
		return 1
	fi
	if [ "${#subject}" -gt "$MAX_SUBJECT" ]; then
		problem "subject is ${#subject} characters, at most $MAX_SUBJECT: '$subject'"
	fi
	if ! printf '%s\n' "$subject" | grep -Eq '^[a-z0-9][a-z0-9_./+-]*(, [a-z0-9][a-z0-9_./+-]*)*: [^ ]'; then
		problem "subject is not 'area: what changed' (lower-case area, ': ', the change): '$subject'"
	else
		word=$(printf '%s\n' "$subject" | sed 's/^[^:]*: \([^ ]*\).*/\1/' | tr 'A-Z' 'a-z')
		case $word in
		added | adds | fixed | fixes | changed | changes | removed | removes | updated | updates | \
			moved | moves | renamed | renames | made | makes | improved | improves | refactored | \
			refactors | adding | fixing | changing | removing | updating)
			problem "subject verb '$word' is not in the imperative (say what the commit does: 'add', 'fix', ...)"
			;;
		esac
	fi
	case $subject in
	*.) problem "subject ends with a period" ;;
	esac
	if [ -n "$second" ]; then
		problem "no blank line after the subject"
	elif [ -z "$body" ]; then
		problem "no body: say why, with the figures (before/after) and the tests run"
	fi
	return $bad
}

if [ $# -ge 1 ] && [ "$1" = --new ]; then
	cd "$(dirname "$0")/.." || exit 2
	rev=${2:-HEAD}
	if ! git rev-parse --git-dir >/dev/null 2>&1; then
		echo "skip: commit messages not checked (not a git clone)"
		exit 0
	fi
	if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
		echo "skip: commit messages not checked (a shallow clone; fetch with --unshallow to check)"
		exit 0
	fi
	base=$(sed -n 's/^\([0-9a-f]\{40\}\).*/\1/p' scripts/commit-msg-base | head -n 1)
	if [ -z "$base" ] || ! git cat-file -e "$base^{commit}" 2>/dev/null; then
		echo "skip: commit messages not checked (base commit ${base:-?} not in this clone)"
		exit 0
	fi
	if ! git merge-base --is-ancestor "$base" "$rev" 2>/dev/null; then
		echo "skip: commit messages not checked ($rev does not descend from the base ${base:0:12})"
		exit 0
	fi
	nbad=0 n=0
	for c in $(git rev-list "$base..$rev"); do
		n=$((n + 1))
		git log -1 --format=%B "$c" | check_msg "commit $(git log -1 --format='%h' "$c")" || nbad=$((nbad + 1))
	done
	if [ "$nbad" -gt 0 ]; then
		echo "$nbad of $n commits after ${base:0:12} break the message convention (CONTRIBUTING.md)"
		exit 1
	fi
	echo "commit messages: $n commits after ${base:0:12} follow the convention"
	exit 0
fi

if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
	echo "usage: $0 MESSAGE-FILE | --new [REV]" >&2
	exit 2
fi
if ! check_msg "${1##*/}" <"$1"; then
	echo "(the convention is in CONTRIBUTING.md; the message is kept in $1)"
	exit 1
fi
exit 0
