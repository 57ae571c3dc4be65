#!/usr/bin/env bash
# loomrun must run an unmodified MPI program (built without Loom) with Loom active:
# same output as the native run, and LOOM_STATS showing Loom packed on every rank.
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3 ranks=${4:-2}
native=$("$mpiexec" -n "$ranks" "$program")
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
loom=$(LOOM_STATS=1 "$loomrun" -n "$ranks" "$program" 2>"$stats_file")
echo "native: $native"
echo "loom:   $loom"
cat "$stats_file"
[[ "$native" == "$loom" ]] || { echo "FAIL: outputs differ"; exit 1; }
[[ "$loom" == *OK* ]] || { echo "FAIL: program reported errors"; exit 1; }
served=$(grep -c 'MPI_Pack loom=[1-9]' "$stats_file" || true)
[[ "$served" == "$ranks" ]] || { echo "FAIL: Loom packed on $served of $ranks ranks"; exit 1; }
echo "PASS: identical output, Loom packed on all $ranks ranks"
