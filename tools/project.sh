#!/usr/bin/env bash
# Loom at scale, projected with SimGrid's SMPI (docs/projection.md):
#   tools/project.sh calibrate [--slow-link]   measure this machine (sim/calibration.env)
#   tools/project.sh validate|halo|alltoall|plot [--quick] [--out DIR]   (sim/project.py --help)
# Needs build/openmpi (the host build) and build/smpi (cmake -DLOOM_SMPI=ON), see the docs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  calibrate) shift; exec python3 "$root/sim/calibrate.py" "$@" ;;
  validate | halo | alltoall | plot) exec python3 "$root/sim/project.py" "$@" ;;
  -h | --help) sed -n '2,5s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "usage: tools/project.sh calibrate|validate|halo|alltoall|plot [options] (--help)" >&2; exit 2 ;;
esac
