#!/usr/bin/env bash
# make flake: the hunt for flaky tests. Runs the timing-sensitive packages
# COUNT times (default 20), without and then with the race detector, while
# LOAD busy loops (default 2, one per CPU of the 2-vCPU VMs this project is
# tested on) compete for the CPUs, as a loaded CI machine would. A test
# that fails here once is a bug to fix at its cause.
#
#   scripts/flake.sh [packages...]     (default: the list below)
#   COUNT=20 LOAD=2 RUN=regexp scripts/flake.sh
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-20}
load=${LOAD:-2}
run=${RUN:-.}
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	pkgs=(./ports/... ./dataplane/... ./testbed/... ./bench/... ./experiment/... ./demo/...)
	for p in ./loadgen/... ./closedloop/...; do
		[ -d "${p%/...}" ] && pkgs+=("$p")
	done
fi
busy=()
stop() { [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq "$load"); do
	sh -c 'while :; do :; done' &
	busy+=($!)
done
echo "flake: ${pkgs[*]}, -count=$count, with $load busy loops"
status=0
for race in "" -race; do
	echo "flake: go test $race -count=$count"
	go test $race -count="$count" -timeout 120m -run "$run" "${pkgs[@]}" || status=1
done
exit $status
