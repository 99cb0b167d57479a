#!/usr/bin/env bash
# make demo: a throwaway ZooKeeper (zkr dev), three zkr lock processes
# queueing on one path, then three zkr elect processes, whose leader is
# killed with kill -9 and replaced. Everything started here is stopped on
# exit, however the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ZKR=${ZKR:-./zkr}

tmp=$(mktemp -d)
dev=""
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	if [ -n "$dev" ]; then
		kill -TERM "$dev" 2>/dev/null || true
		wait "$dev" 2>/dev/null || true
		dev=""
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

heading() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

heading "A throwaway ZooKeeper: zkr dev"
"$ZKR" dev >"$tmp/dev.out" 2>"$tmp/dev.err" &
dev=$!
for _ in $(seq 900); do # up to 90s for a cold JVM
	[ -s "$tmp/dev.out" ] && break
	if ! kill -0 "$dev" 2>/dev/null; then
		cat "$tmp/dev.err" >&2
		exit 1
	fi
	sleep 0.1
done
ZK_CONNECT=$(head -1 "$tmp/dev.out")
export ZK_CONNECT
echo "serving at $ZK_CONNECT (ZK_CONNECT is zkr's default --connect)"

heading "1. Three zkr lock on /demo/lock: served in arrival order (FIFO)"
echo "each COMMAND prints its fencing token and works for a second"
for w in A B C; do
	"$ZKR" lock --id "worker-$w" /demo/lock -- sh -c \
		'echo "  [$ZKR_PARTICIPANT_ID] got the lock, fencing token $ZKR_FENCING_TOKEN"; sleep 1; echo "  [$ZKR_PARTICIPANT_ID] done, releasing"' &
	pids+=($!)
	sleep 0.2 # A queues before B, B before C
done
echo "  zkr leader /demo/lock (holder first, then the queue):"
"$ZKR" leader /demo/lock | sed 's/^/    /' || true # a slow machine may not have queued all three yet
for p in "${pids[@]}"; do wait "$p"; done
pids=()
echo "the tokens grow from holder to holder: a resource that refuses lower"
echo "tokens than it has seen is safe even from a holder that was paused"

heading "2. Three zkr elect --requeue on /demo/leader, session timeout 2s"
for n in 1 2 3; do
	"$ZKR" --session-timeout 2s elect --requeue --id "node-$n" /demo/leader -- sh -c \
		'echo "  $(date +%T) [$ZKR_PARTICIPANT_ID] leading, fencing token $ZKR_FENCING_TOKEN"
		 while :; do sleep 1; echo "  $(date +%T) [$ZKR_PARTICIPANT_ID] working"; done' &
	pids+=($!)
	sleep 0.2
done
sleep 1.5
echo "  zkr leader /demo/leader:"
"$ZKR" leader /demo/leader | sed 's/^/    /'
old=
for _ in $(seq 100); do # on a slow machine the first term may take a moment
	old=$("$ZKR" leader /demo/leader 2>/dev/null | head -1 || true)
	[ -n "$old" ] && break
	sleep 0.1
done
victim=${pids[${old#node-} - 1]}
echo "  $(date +%T) kill -9 $old's zkr (pid $victim): its COMMAND dies with it;"
echo "           its session, and so its leadership, lasts until the server expires it"
t0=$(now)
disown "$victim" # no "Killed" notice from bash
kill -KILL "$victim"
new=$old
for _ in $(seq 200); do
	new=$("$ZKR" leader /demo/leader 2>/dev/null | head -1 || true)
	[ -n "$new" ] && [ "$new" != "$old" ] && break
	sleep 0.1
done
sleep 0.3 # let the new leader's first line through
echo "  $new took over $(since "$t0") after the kill (session timeout 2s)"
echo "  zkr leader /demo/leader:"
"$ZKR" leader /demo/leader | sed 's/^/    /'
sleep 1.2

heading "Cleaning up"
cleanup
echo "SIGTERM to each zkr (passed on to the running COMMAND), then to zkr dev,"
echo "which stopped the server and removed its data"
