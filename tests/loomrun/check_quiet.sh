#!/usr/bin/env bash
# Loom writes nothing to stderr that the job did not ask for: a calibration measured under
# other host transport settings is ignored silently, and with LOOM_VERBOSE=1 it is reported
# once per job (never more than once per rank). The program's own output must not change.
set -euo pipefail
loomrun=$1 program=$2 ranks=${3:-2}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
grid='[{"spread": 2, "block_bytes": [1, 4096], "message_bytes": [1024, 1048576],
        "seconds": [[1e-6, 1e-6], [1e-6, 1e-6]]}]'
curve='{"message_bytes": [1024, 1048576], "seconds": [1e-6, 1e-6]}'
# A valid calibration measured with a transport setting no test run has.
for mpi in openmpi mpich; do
  cat >"$cache/calibration-$mpi.json" <<JSON
{"format": "loom-calibration", "version": 2, "host_mpi": "Another MPI 0.0", "machine": "test",
 "other_node_measured": false, "pack": $grid, "unpack": $grid,
 "contiguous": {"same_node": $curve, "other_node": $curve},
 "host_typed": {"same_node": $grid, "other_node": $grid},
 "host_typed_nested": {"same_node": $grid, "other_node": $grid},
 "loom_packed": {"same_node": $grid, "other_node": $grid},
 "host_settings": "MPIR_CVAR_LOOM_TEST_ONLY=1 OMPI_MCA_btl=self"}
JSON
done
unset LOOM_VERBOSE LOOM_DEBUG LOOM_STATS
export LOOM_CACHE_DIR=$cache
fail=0
quiet_err="$cache/quiet.stderr" verbose_err="$cache/verbose.stderr"
quiet=$("$loomrun" -n "$ranks" "$program" 2>"$quiet_err")
verbose=$(LOOM_VERBOSE=1 "$loomrun" -n "$ranks" "$program" 2>"$verbose_err")
echo "stdout: $quiet"
if [[ -s "$quiet_err" ]]; then
  echo "FAIL: without LOOM_VERBOSE, stderr was not empty:"
  cat "$quiet_err"
  fail=1
fi
[[ "$quiet" == *OK* && "$quiet" == "$verbose" ]] || {
  echo "FAIL: program output differs or reports errors: '$quiet' vs '$verbose'"
  fail=1
}
said=$(grep -c "loom: ignoring calibration $cache/calibration-.*host settings" "$verbose_err" || true)
echo "LOOM_VERBOSE=1: $said of $ranks ranks reported the calibration:"
cat "$verbose_err"
if ((said < 1 || said > ranks)); then
  echo "FAIL: expected the mismatch reported once per job, at most once per rank"
  fail=1
fi
((fail == 0)) && echo "PASS: silent without LOOM_VERBOSE, the mismatch reported with it"
exit "$fail"
