#!/usr/bin/env bash
# Compares the speed of two commits of Loom on this machine: builds libloom and loom-bench of
# each (CUDA off, ccache), then runs `loom-bench pack`, `pingpong` and `app` of the two builds
# alternately in one run (A, B, A, B, ...) and prints, per case, how fast B is relative to A,
# with the spread over the rounds, and a summary. Run it before submitting a change that touches
# a data path: `tools/perf-compare.sh main HEAD`.
#
# Each build's loom-bench times Loom against the host MPI sample by sample in the same process;
# B/A compares the two builds' Loom-over-host ratios, so the machine's drift between runs
# cancels. Above 1 B is faster. A case is "within noise" when its rounds fall on both sides of 1.
#
#   LOOM_PERF_COMPARE_DIR   where the builds are kept and reused (default
#                           ${XDG_CACHE_HOME:-$HOME/.cache}/loom-perf-compare)
#   LOOM_JOBS               build parallelism (default 2)
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/perf-compare.sh [options] A B
  A, B: commits (anything `git rev-parse` takes: main, HEAD, 465eb92, a branch). Commit your
  changes first: the builds are of commits, not of the working tree.
options:
  --mpi openmpi|mpich|both   host MPIs to compare on (default both)
  --quick                    a quick check: two rounds, loom-bench's --quick cases
  --rounds N                 alternated rounds of A and B (default 3)
  --benches LIST             subcommands to run, from pack,pingpong,app (default all three)
  --pack-args "ARGS"         extra arguments for `loom-bench pack` (e.g. "--types vec2d,milc")
  --pingpong-args "ARGS"     extra arguments for `loom-bench pingpong` (e.g. "--sizes 64K,1M")
  --app-args "ARGS"          extra arguments for `loom-bench app`
  --out DIR                  keep every run's JSON result and the table in DIR
  -h, --help                 this text
Settings through the environment: LOOM_PERF_COMPARE_DIR (build cache), LOOM_JOBS (default 2).
EOF
}

mpis=(openmpi mpich)
rounds=3
quick=0
benches=(pack pingpong app)
pack_args="" pingpong_args="" app_args=""
out=""
commits=()
while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --mpi)
      [[ $# -ge 2 ]] || { echo "perf-compare: --mpi needs a value" >&2; exit 2; }
      case "$2" in
        openmpi | mpich) mpis=("$2") ;;
        both) mpis=(openmpi mpich) ;;
        *) echo "perf-compare: --mpi takes openmpi, mpich or both, not '$2'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --quick) quick=1; shift ;;
    --rounds)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || {
        echo "perf-compare: --rounds needs a positive whole number" >&2; exit 2; }
      rounds=$2; rounds_given=1; shift 2 ;;
    --benches)
      [[ $# -ge 2 ]] || { echo "perf-compare: --benches needs a value" >&2; exit 2; }
      IFS=, read -r -a benches <<<"$2"
      for b in "${benches[@]}"; do
        case "$b" in pack | pingpong | app) ;; *)
          echo "perf-compare: unknown subcommand '$b' (pack, pingpong, app)" >&2; exit 2 ;;
        esac
      done
      shift 2 ;;
    --pack-args) pack_args=${2-}; shift 2 ;;
    --pingpong-args) pingpong_args=${2-}; shift 2 ;;
    --app-args) app_args=${2-}; shift 2 ;;
    --out) out=${2:?perf-compare: --out needs a directory}; shift 2 ;;
    -*) echo "perf-compare: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) commits+=("$1"); shift ;;
  esac
done
if ((${#commits[@]} != 2)); then
  echo "perf-compare: give two commits, A and B" >&2
  usage >&2
  exit 2
fi
((quick)) && [[ -z "${rounds_given:-}" ]] && rounds=2

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${LOOM_PERF_COMPARE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/loom-perf-compare}
jobs=${LOOM_JOBS:-2}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

shas=()
for c in "${commits[@]}"; do
  sha=$(git -C "$root" rev-parse --verify --quiet "$c^{commit}") || {
    echo "perf-compare: '$c' is not a commit of $root" >&2
    exit 2
  }
  shas+=("$sha")
done
label_a="${commits[0]} (${shas[0]:0:7})"
label_b="${commits[1]} (${shas[1]:0:7})"

# The sources of a commit, unpacked once; builds of both MPIs beside them. ccache sees the same
# relative paths in every commit's tree (CCACHE_BASEDIR), so files a change leaves alone hit.
export CCACHE_BASEDIR=$cache
launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
build() {  # build SHA MPI -> prints the build directory
  local sha=$1 mpi=$2 src=$cache/$1/src
  local dir=$src/build-$mpi
  if [[ ! -f "$src/CMakeLists.txt" ]]; then
    rm -rf "$src" && mkdir -p "$src"
    git -C "$root" archive "$sha" | tar -x -C "$src"
  fi
  if [[ ! -x "$dir/loom-bench" || ! -f "$dir/.built" ]]; then
    echo "perf-compare: building ${sha:0:7} against $mpi in $dir" >&2
    if ! cmake -S "$src" -B "$dir" -DLOOM_MPI="$mpi" -DLOOM_CUDA=OFF -DLOOM_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$dir.log" 2>&1 ||
      ! cmake --build "$dir" -j "$jobs" --target loom loom-bench >>"$dir.log" 2>&1; then
      echo "perf-compare: the build of ${sha:0:7} against $mpi failed; see $dir.log" >&2
      return 1
    fi
    touch "$dir/.built"
  fi
  echo "$dir"
}

if [[ $(id -u) == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1  # two ranks on a machine of fewer cores

results=${out:-$(mktemp -d)}
mkdir -p "$results"
[[ -n "$out" ]] || trap 'rm -rf "$results"' EXIT

run_bench() {  # run_bench DIR MPI BENCH JSON
  local dir=$1 mpi=$2 bench=$3 json=$4 extra=() ranks=2
  case "$bench" in
    pack) ranks=1; read -r -a extra <<<"$pack_args" ;;
    pingpong) read -r -a extra <<<"$pingpong_args" ;;
    app) read -r -a extra <<<"$app_args" ;;
  esac
  ((quick)) && extra=(--quick "${extra[@]}")
  "mpiexec.$mpi" -n "$ranks" "$dir/loom-bench" "$bench" --json "$json" "${extra[@]}" \
    >"$json.log" 2>&1 || {
    echo "perf-compare: loom-bench $bench failed ($json.log):" >&2
    tail -5 "$json.log" >&2
    return 1
  }
}

echo "perf-compare: B = $label_b against A = $label_a; $rounds round(s) of A, B per subcommand"
echo "perf-compare: load at start: $(uptime | sed 's/.*load average/load average/')"
for mpi in "${mpis[@]}"; do
  command -v "mpiexec.$mpi" >/dev/null || {
    echo "perf-compare: mpiexec.$mpi not found: $mpi skipped" >&2
    continue
  }
  dir_a=$(build "${shas[0]}" "$mpi")
  dir_b=$(build "${shas[1]}" "$mpi")
  for bench in "${benches[@]}"; do
    for ((r = 1; r <= rounds; ++r)); do
      echo "perf-compare: $mpi $bench round $r/$rounds" >&2
      run_bench "$dir_a" "$mpi" "$bench" "$results/$mpi-$bench-A-$r.json"
      run_bench "$dir_b" "$mpi" "$bench" "$results/$mpi-$bench-B-$r.json"
    done
  done
done
echo "perf-compare: load at end: $(uptime | sed 's/.*load average/load average/')"
python3 "$root/tools/perf_compare.py" --a "$label_a" --b "$label_b" "$results" |
  tee "$results/table.txt"
[[ -z "$out" ]] || echo "perf-compare: results in $results"
