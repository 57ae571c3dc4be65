#!/usr/bin/env bash
# An unmodified Fortran MPI program under loomrun: the same output as natively (its own
# checks compare Loom's MPI_* calls with the host's PMPI_* ones), and LOOM_STATS showing
# that Loom packed, sent, received and unpacked on both ranks, started by MPI_INIT and by
# MPI_INIT_THREAD. LOOM_METHOD=pack makes every derived-type message Loom's, whatever the
# machine's calibration says.
set -euo pipefail
loomrun=$1 mpiexec=$2 program=$3
native=$("$mpiexec" -n 2 "$program")
echo "native: $native"
[[ "$native" == *"fortran_check: OK"* ]] || { echo "FAIL: the native run reported errors"; exit 1; }
stats_file=$(mktemp)
trap 'rm -f "$stats_file"' EXIT
for init in MPI_INIT MPI_INIT_THREAD; do
  thread_flag=""
  [[ $init == MPI_INIT_THREAD ]] && thread_flag=1
  loom=$(LOOM_TEST_INIT_THREAD=$thread_flag LOOM_STATS=1 LOOM_METHOD=pack \
    "$loomrun" -n 2 "$program" 2>"$stats_file")
  echo "loom ($init): $loom"
  cat "$stats_file"
  [[ "$native" == "$loom" ]] || { echo "FAIL: outputs differ"; exit 1; }
  for pattern in 'MPI_Pack loom=[1-9]' 'send packed=[1-9]' 'recv unpacked=[1-9]'; do
    ranks=$(grep -c "$pattern" "$stats_file" || true)
    [[ "$ranks" == 2 ]] || { echo "FAIL ($init): '$pattern' on $ranks of 2 ranks"; exit 1; }
  done
done
echo "PASS: identical output, Loom served the Fortran calls on both ranks"
