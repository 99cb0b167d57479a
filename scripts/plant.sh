#!/usr/bin/env bash
# plant.sh: plants known bugs in a throwaway copy of the library and runs
# the chaos suite against each, to show the suite catches every one.
#
#   scripts/plant.sh [-s SEEDS] [NAME...]
#
# Each bug is integration/chaos/planted/NAME.patch (a diff against the
# library, applied with git apply in a detached worktree of HEAD, never in
# this checkout), with its row in integration/chaos/planted/bugs.tsv: name,
# recipe, the violation kind that names the bug, what the bug is. For each
# bug and each seed (default: three drawn at random) it runs
# `ZKR_CHAOS_RECIPES=<recipe> ZKR_CHAOS_SEED=<seed> make chaos` and says
# whether the run reported that kind. A patch that no longer applies, or a
# planted tree that does not build, is a failure of the tool, not a catch.
# It prints one table row per bug and exits 1 unless every bug was caught
# in every run. Only one chaos run goes at a time on the machine
# (flock on /tmp/zkr-chaos.lock), so concurrent callers queue.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=integration/chaos/planted

seeds=()
while getopts "s:" o; do
	case "$o" in
	s) IFS=, read -ra seeds <<<"$OPTARG" ;;
	*) echo "usage: $0 [-s SEED,SEED,...] [NAME...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ ${#seeds[@]} -eq 0 ]; then
	for _ in 1 2 3; do seeds+=("$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')"); done
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	mapfile -t names < <(awk -F'\t' '!/^#/ && NF {print $1}' "$dir/bugs.tsv")
fi

out=${PLANT_OUT:-$root/chaos-out/planted}
mkdir -p "$out"
failed=0
printf '%s\t%s\t%s\t%s\n' "bug" "recipe" "seed" "violations reported (expected kind first)"
for name in "${names[@]}"; do
	row=$(awk -F'\t' -v n="$name" '$1 == n' "$dir/bugs.tsv")
	if [ -z "$row" ]; then echo "plant: no bug $name in $dir/bugs.tsv" >&2; exit 2; fi
	recipe=$(cut -f2 <<<"$row")
	kind=$(cut -f3 <<<"$row")
	wt=$(mktemp -d /tmp/zkr-plant-XXXXXX)
	git worktree add --detach "$wt" HEAD >/dev/null 2>&1
	# The working tree's own uncommitted changes to the suite go too: a
	# check being written is tested against the bugs before it is committed.
	git diff HEAD -- integration/chaos | (cd "$wt" && git apply --allow-empty)
	if ! (cd "$wt" && git apply "$root/$dir/$name.patch"); then
		echo "plant: $name.patch does not apply to HEAD" >&2
		failed=1
		git worktree remove --force "$wt"
		continue
	fi
	if ! (cd "$wt" && go build ./... && go -C integration/chaos vet . >/dev/null); then
		echo "plant: $name does not build" >&2
		failed=1
		git worktree remove --force "$wt"
		continue
	fi
	for seed in "${seeds[@]}"; do
		o="$out/$name/$seed"
		mkdir -p "$o"
		(cd "$wt" && flock /tmp/zkr-chaos.lock env ZKR_CHAOS=short ZKR_CHAOS_OUT="$o" ZKR_CHAOS_RECIPES="$recipe" ZKR_CHAOS_SEED="$seed" \
			go -C integration/chaos test -count=1 -v -timeout 30m -run '^TestChaos$' . >"$o/test.log" 2>&1) || true
		# The violations the run reported, by kind: "    chaos_test.go:NN: KIND: detail".
		kinds=$(grep -oE '^\s+chaos_test\.go:[0-9]+: [a-z0-9-]+:' "$o/test.log" | awk '{print $2}' | tr -d ':' | sort | uniq -c | awk '{print $2"="$1}' | paste -sd' ' - || true)
		caught=no
		grep -qE "^\s+chaos_test\.go:[0-9]+: $kind:" "$o/test.log" && caught=yes
		[ "$caught" = yes ] || failed=1
		printf '%s\t%s\t%s\t%s: %s\n' "$name" "$recipe" "$seed" "$caught" "${kinds:-none}"
	done
	git worktree remove --force "$wt"
done
exit $failed
