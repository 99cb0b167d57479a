#!/usr/bin/env bash
# make mod-check: `go work sync` would change nothing. The modules in
# go.work build with one set of versions; each go.mod must already require
# those, or a module built alone (as a user's go install builds zkr) gets
# other versions than the ones tested. The files are put back as they were
# either way: the check reports, `go work sync` fixes.
set -euo pipefail
cd "$(dirname "$0")/.."
files=(go.work $(for m in $(sed -n 's/^\t\(\.[^ ]*\)$/\1/p' go.work); do echo "$m/go.mod" "$m/go.sum"; done))
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
for f in "${files[@]}"; do
	[ -e "$f" ] && install -D -m 0644 "$f" "$keep/$f"
done
go work sync
changed=0
for f in "${files[@]}"; do
	if ! cmp -s "$f" "$keep/$f"; then
		echo "work-sync-check: go work sync changes $f:" >&2
		diff -u "$keep/$f" "$f" >&2 || true
		cp "$keep/$f" "$f"
		changed=1
	fi
done
if [ $changed -ne 0 ]; then
	echo "work-sync-check: run go work sync (and go mod tidy in the changed modules) and commit the result" >&2
	exit 1
fi
