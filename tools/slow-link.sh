#!/usr/bin/env bash
# Runs an MPI job over a real, rate-limited network on one machine: every emulated node is a
# Linux network namespace, joined to a bridge by a veth pair shaped with tc tbf in both
# directions. Open MPI runs over its TCP BTL, MPICH over UCX's TCP transport. Before the
# program it checks with a plain MPI bandwidth test that the link runs at the set rate, and
# it tears everything down on exit, error or interrupt. See docs/slow-link.md.
set -euo pipefail

prefix=loomsl # every namespace this script creates is named loomsl-*; nothing else is touched
lock=/run/lock/loom-slow-link.lock

usage() {
  cat <<'EOF'
usage: tools/slow-link.sh [options] [-- PROGRAM [ARGS...]]
       tools/slow-link.sh --self-test | --cleanup | --help
  Runs PROGRAM under mpiexec with each emulated node in its own network namespace, linked
  through a bridge by veth pairs limited to --rate in each direction (tc tbf). First checks
  with a plain MPI bandwidth test (4 MiB messages) that the link runs at the set rate and
  fails if not. Without PROGRAM it runs the check only. Needs root (network namespaces, tc).
options:
  --mpi openmpi|mpich     host MPI (default openmpi): mpiexec.openmpi over the TCP BTL (vader
                          between ranks of one node), or mpiexec.mpich over UCX TCP
  --nodes N               emulated nodes (default 2)
  --ranks-per-node R      ranks per node (default 1; Open MPI only, MPICH refuses R > 1)
  --rate RATE             link rate per node and direction, a number with kbit, mbit or
                          gbit (default 1gbit)
  --tolerance PCT         the check accepts rate * (1 - PCT/100) .. rate * (1 + PCT/200) of
                          measured MB/s against the set rate (default 15)
  --check                 run the bandwidth check only (also the default without PROGRAM)
  --no-check              skip the bandwidth check
  --hello                 run a helper that prints each rank's node and the LD_PRELOAD,
                          LOOM_* and UCX_* variables it sees, instead of PROGRAM
  --timeout SEC           end the program (and the check) after SEC seconds, status 124
                          (default 0: no limit)
  --no-pin                do not pin ranks (default: local rank L of node I on allowed CPU
                          number (L * nodes + I) mod CPUs)
  --subnet A.B.C          the private /24 of the emulated nodes (default 10.213.42)
  --self-test             check both MPIs (those installed): 2 nodes at --rate, the
                          environment reaching the ranks, nothing left behind afterwards
  --cleanup               remove what a killed run left (namespaces loomsl-*) and exit
  --verbose               print the commands that set up the network and launch the job
  --help                  this text
environment: every variable reaches the ranks (LD_PRELOAD only the ranks, not the launcher
  or the network tools); UCX_TLS and UCX_NET_DEVICES are set for MPICH.
examples:
  tools/slow-link.sh --mpi openmpi --nodes 2 --rate 1gbit
  LD_PRELOAD=$PWD/build/openmpi/interpose/libloom.so LOOM_STATS=1 \
    tools/slow-link.sh --mpi openmpi -- build/openmpi/loom-bench pingpong --quick
EOF
}

die() {
  echo "slow-link: $*" >&2
  exit 1
}
say() { echo "slow-link: $*"; }
verbose=0
run() {
  ((verbose)) && echo "+ $*" >&2
  "$@" 9>&-
}

mpi=openmpi nodes=2 rpn=1 rate=1gbit tolerance=15 mode=run pin=1 subnet=10.213.42 hello=0 timeout=0
program=()
while (($#)); do
  case "$1" in
    --mpi | --nodes | --ranks-per-node | --rate | --tolerance | --subnet | --timeout)
      (($# >= 2)) || die "$1 needs a value (--help)"
      case "$1" in
        --mpi) mpi=$2 ;;
        --nodes) nodes=$2 ;;
        --ranks-per-node) rpn=$2 ;;
        --rate) rate=$2 ;;
        --tolerance) tolerance=$2 ;;
        --subnet) subnet=$2 ;;
        --timeout) timeout=$2 ;;
      esac
      shift 2
      ;;
    --check) mode=check && shift ;;
    --no-check) mode=nocheck && shift ;;
    --hello) hello=1 && shift ;;
    --no-pin) pin=0 && shift ;;
    --self-test) mode=selftest && shift ;;
    --cleanup) mode=cleanup && shift ;;
    --verbose) verbose=1 && shift ;;
    -h | --help)
      usage
      exit 0
      ;;
    --)
      shift
      program=("$@")
      break
      ;;
    *)
      echo "slow-link: unknown argument '$1'" >&2
      usage >&2
      exit 2
      ;;
  esac
done

[[ $mpi == openmpi || $mpi == mpich ]] || die "--mpi must be openmpi or mpich, not '$mpi'"
if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 1 || nodes > 200)); then die "--nodes must be 1..200"; fi
if ! [[ $rpn =~ ^[0-9]+$ ]] || ((rpn < 1)); then die "--ranks-per-node must be a positive integer"; fi
if [[ $mpi == mpich ]] && ((rpn > 1)); then
  die "--ranks-per-node $rpn with MPICH is refused: two MPICH ranks per emulated node hung in" \
    "MPI_Finalize in 3 of 6 runs here (UCX TCP). Use one rank per node (more --nodes), or Open MPI."
fi
if ! [[ $timeout =~ ^[0-9]+$ ]]; then die "--timeout must be a number of seconds (0: none)"; fi
if ! [[ $tolerance =~ ^[0-9]+$ ]] || ((tolerance > 99)); then die "--tolerance must be a percentage 0..99"; fi
if ! [[ $subnet =~ ^10\.([0-9]{1,3})\.([0-9]{1,3})$ ]] || ((BASH_REMATCH[1] > 255 || BASH_REMATCH[2] > 255)); then
  die "--subnet must be a private 10.x.y (a /24 of its own), not '$subnet'"
fi
[[ $rate =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] || die "--rate must be a number with kbit, mbit or gbit, not '$rate'"
case ${BASH_REMATCH[2]} in
  kbit) rate_bps=$((BASH_REMATCH[1] * 1000)) ;;
  mbit) rate_bps=$((BASH_REMATCH[1] * 1000000)) ;;
  gbit) rate_bps=$((BASH_REMATCH[1] * 1000000000)) ;;
esac
((rate_bps >= 1000000)) || die "--rate below 1mbit is not supported (the check would take minutes)"
rate_mbs=$(awk -v b="$rate_bps" 'BEGIN { printf "%.3f", b / 8 / 1e6 }') # MB/s, 1e6 bytes
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/$(basename "${BASH_SOURCE[0]}")"

# --- self-test: sub-runs of this script, then a look for leftovers -------------------------
if [[ $mode == selftest ]]; then
  fails=0 tested=0
  for m in openmpi mpich; do
    if ! command -v "mpiexec.$m" >/dev/null || ! command -v "mpicc.$m" >/dev/null; then
      say "self-test: $m not installed, skipped"
      continue
    fi
    tested=$((tested + 1))
    say "self-test: $m, 2 nodes at $rate: bandwidth check"
    "$self" --mpi "$m" --nodes 2 --rate "$rate" --tolerance "$tolerance" --subnet "$subnet" --check ||
      fails=$((fails + 1))
    say "self-test: $m, 2 nodes: environment reaches the ranks"
    # an arbitrary variable, a LOOM_ one and LD_PRELOAD (libc: harmless) must reach each rank
    out=$(SELFTEST_ANY=any-$m LOOM_SELFTEST=loom-$m LD_PRELOAD=libc.so.6 SLOWLINK_HELLO_VARS=SELFTEST_ANY \
      "$self" --mpi "$m" --nodes 2 --rate "$rate" --subnet "$subnet" --no-check --hello 2>&1) || true
    echo "$out"
    seen=$(grep "LD_PRELOAD=libc.so.6" <<<"$out" | grep "LOOM_SELFTEST=loom-$m" | grep -c "SELFTEST_ANY=any-$m" || true)
    nodes_seen=$(grep -o 'on node [^ ]*' <<<"$out" | sort -u | grep -c "$prefix-n" || true)
    if [[ $seen == 2 && $nodes_seen == 2 ]] && grep -q '(1 rank(s) on this node)' <<<"$out" &&
      ! grep -q '(2 rank(s) on this node)' <<<"$out"; then
      say "self-test: $m: both ranks saw the variables, each on a node of its own: ok"
    else
      say "self-test failed: $m: the variables reached $seen of 2 ranks, on $nodes_seen node(s) of their own (both needed)"
      fails=$((fails + 1))
    fi
  done
  left=$(ip netns list 2>/dev/null | grep -c "^$prefix-" || true)
  if ((left)); then
    say "self-test failed: $left namespace(s) $prefix-* left behind"
    fails=$((fails + 1))
  else
    say "self-test: no namespaces $prefix-* left behind: ok"
  fi
  ((tested)) || die "self-test: neither MPI is installed"
  ((fails == 0)) || die "self-test: $fails failure(s)"
  say "self-test: passed"
  exit 0
fi

# --- preconditions ---------------------------------------------------------------------
(($(id -u) == 0)) || die "needs root (network namespaces and tc); run it as root or with sudo"
for tool in ip tc flock taskset awk; do
  command -v "$tool" >/dev/null || die "'$tool' not found (tools/install-deps.sh installs iproute2, util-linux)"
done
if [[ $mode != cleanup ]]; then
  command -v "mpiexec.$mpi" >/dev/null || die "mpiexec.$mpi not found (tools/install-deps.sh)"
  command -v "mpicc.$mpi" >/dev/null || die "mpicc.$mpi not found (tools/install-deps.sh)"
  if ((${#program[@]} == 0 && !hello)); then
    [[ $mode == nocheck ]] && die "--no-check without PROGRAM (or --hello) has nothing to run"
    mode=check
  fi
  if ((${#program[@]})) && ((hello)); then die "--hello and PROGRAM exclude each other"; fi
fi

# LD_PRELOAD (Loom) is meant for the ranks: keep it away from ip, tc, mpiexec and the daemons;
# the rank wrapper sets it again just before exec'ing the program.
if [[ -n ${LD_PRELOAD+x} ]]; then
  export SLOWLINK_LD_PRELOAD=$LD_PRELOAD
  unset LD_PRELOAD
fi

# One run at a time (the names are fixed); the lock is not passed to child processes.
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
if ! flock -n 9; then
  say "another slow-link run holds $lock; waiting (up to 30 minutes)"
  flock -w 1800 9 || die "gave up waiting for $lock"
fi

namespaces() { ip netns list 2>/dev/null | awk -v p="^$prefix-" '$1 ~ p { print $1 }'; }

# Ends every process inside our namespaces (they are all ours), then deletes the namespaces,
# which removes their veths and the bridge with them.
stop_jobs() {
  local ns pids sig _
  local all
  all=$(namespaces)
  [[ -n $all ]] || return 0
  for sig in TERM KILL; do
    pids=""
    for ns in $all; do pids+=" $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"; done
    [[ -n ${pids// /} ]] || break
    # shellcheck disable=SC2086 # a list of pids
    kill -s "$sig" $pids 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      pids=""
      for ns in $all; do pids+=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' '); done
      [[ -n ${pids// /} ]] || break
      sleep 0.2
    done
  done
}
teardown() {
  local ns all
  stop_jobs
  all=$(namespaces)
  for ns in $all; do run ip netns delete "$ns" 2>/dev/null || true; done
  [[ -z $(namespaces) ]] || echo "slow-link: could not remove all namespaces: $(namespaces | tr '\n' ' ')" >&2
}

stale=$(namespaces | tr '\n' ' ')
if [[ -n $stale ]]; then
  say "removing what an earlier run left: $stale"
  teardown
fi
# scratch folders of killed runs (we hold the lock, so none is in use)
rm -rf /tmp/loom-slow-link.??????
if [[ $mode == cleanup ]]; then
  say "nothing of ours is left ($prefix-*)"
  exit 0
fi

tmp=""
# shellcheck disable=SC2317 # called by the traps
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  teardown
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "slow-link: interrupted, tearing down" >&2; exit 130' INT
trap 'echo "slow-link: terminated, tearing down" >&2; exit 143' TERM
trap 'exit 129' HUP

tmp=$(mktemp -d /tmp/loom-slow-link.XXXXXX)
chmod 755 "$tmp"

# --- the network ------------------------------------------------------------------------
# loomsl-sw: the switch (bridge loomsl-br, address .254, where mpiexec runs, unshaped);
# loomsl-nI: node I, address .(I+1) on its veth slnet0, shaped egress (its uplink); the
# switch's end pI is shaped too (the node's downlink).
sw=$prefix-sw
dev=slnet0
burst=$((rate_bps / 8 / 250)) # 4 ms at the rate, at least 32 KiB (tbf needs >= rate/HZ)
((burst >= 32768)) || burst=32768
limit=16777216 # 16 MiB queue: smaller and the sender's own qdisc drops packets
shape() { # namespace device
  run ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate_bps"bit burst "$burst" limit "$limit" ||
    die "tc tbf failed on $2 in $1: this kernel lacks sch_tbf?"
}
run ip netns add "$sw" || die "cannot create network namespace $sw"
run ip -n "$sw" link set lo up
run ip -n "$sw" link add "$prefix-br" type bridge
run ip -n "$sw" addr add "$subnet.254/24" dev "$prefix-br"
run ip -n "$sw" link set "$prefix-br" up
for ((i = 0; i < nodes; i++)); do
  ns=$prefix-n$i
  run ip netns add "$ns"
  run ip -n "$ns" link set lo up
  run ip -n "$sw" link add "p$i" type veth peer name "$dev" netns "$ns"
  run ip -n "$sw" link set "p$i" master "$prefix-br" up
  run ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev "$dev"
  run ip -n "$ns" link set "$dev" up
  shape "$ns" "$dev"
  shape "$sw" "p$i"
done
if [[ $mpi == mpich ]] && ((nodes > 2)); then
  say "warning: MPICH over UCX TCP (UCX 1.13) hangs in MPI_Finalize at times with more than two" \
    "ranks, also without namespaces; give --timeout (see docs/slow-link.md)"
fi
say "$nodes node(s) x $rpn rank(s), $mpi, link $rate per node and direction (tbf, burst $burst B," \
  "queue $limit B) on $subnet.0/24"

# --- launch helpers -------------------------------------------------------------------------
# rsh agent: "agent [-opts] HOST COMMAND..." runs COMMAND in namespace HOST with HOST as its
# host name (mpiexec.openmpi starts its orted this way, mpiexec.mpich its hydra_pmi_proxy).
cat >"$tmp/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
case \$host in
  $prefix-n*) ;;
  *) echo "slow-link agent: not an emulated node: '\$host'" >&2; exit 1 ;;
esac
# a UTS namespace of its own too, with the node's name as host name: Open MPI names its
# session directory and vader's shared-memory segments after the host name, and two nodes
# with the same name collide (segfault in vader).
exec ip netns exec "\$host" unshare --uts /bin/sh -c 'echo "\$0" >/proc/sys/kernel/hostname && exec /bin/sh -c "\$1"' "\$host" "\$*"
EOF
# rank wrapper: pins the rank, names its node, gives it LD_PRELOAD, execs the program.
# Pinning goes node first: local rank L of node I gets allowed CPU number (L * nodes + I)
# mod CPUs, so the first ranks of different nodes get different CPUs.
cat >"$tmp/rank" <<'EOF'
#!/bin/sh
SLOWLINK_NODE=$(ip netns identify $$ 2>/dev/null)
export SLOWLINK_NODE
if [ -n "$SLOWLINK_CPUS" ]; then
  node=${SLOWLINK_NODE##*-n}
  case $node in '' | *[!0-9]*) node=0 ;; esac
  idx=$(( ${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}} * SLOWLINK_NODES + node ))
  cpu=$(echo "$SLOWLINK_CPUS" | awk -v i="$idx" '{ print $(i % NF + 1) }')
  taskset -pc "$cpu" $$ >/dev/null || echo "slow-link: could not pin $SLOWLINK_NODE's rank to CPU $cpu" >&2
fi
if [ -n "${SLOWLINK_LD_PRELOAD+x}" ]; then
  LD_PRELOAD=$SLOWLINK_LD_PRELOAD
  export LD_PRELOAD
fi
unset SLOWLINK_LD_PRELOAD SLOWLINK_CPUS SLOWLINK_NODES
exec "$@"
EOF
chmod 755 "$tmp/agent" "$tmp/rank"
for ((i = 0; i < nodes; i++)); do
  if [[ $mpi == openmpi ]]; then echo "$prefix-n$i slots=$rpn"; else echo "$prefix-n$i:1"; fi
done >"$tmp/hosts"

cpus=""
if ((pin)); then
  list=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
  for part in ${list//,/ }; do
    if [[ $part == *-* ]]; then
      for ((c = ${part%-*}; c <= ${part#*-}; c++)); do cpus+="$c "; done
    else
      cpus+="$part "
    fi
  done
fi
export SLOWLINK_CPUS=$cpus SLOWLINK_NODES=$nodes

run "mpicc.$mpi" -O2 -o "$tmp/bandwidth" "$here/slow-link/bandwidth.c" ||
  die "could not build the bandwidth test with mpicc.$mpi"

ranks=$((nodes * rpn))
# Runs the job in the switch namespace in the background, so that a signal reaches the trap
# at once; returns its status. "job plain CMD..." runs without the user's LD_PRELOAD (the
# bandwidth check measures the link, not Loom, and pins its ranks itself), "job user CMD..."
# with it.
job() {
  local kind=$1 pid name
  shift
  local launch=() unset=()
  [[ $kind == plain ]] && unset=(-u SLOWLINK_LD_PRELOAD SLOWLINK_CPUS=)
  if [[ $mpi == openmpi ]]; then
    local btl=tcp,self
    ((rpn > 1)) && btl=tcp,vader,self
    launch=(mpiexec.openmpi --allow-run-as-root --hostfile "$tmp/hosts" -n "$ranks" --bind-to none
      --mca plm_rsh_agent "$tmp/agent" --mca plm_rsh_no_tree_spawn 1
      --mca pml ob1 --mca btl "$btl" --mca btl_tcp_if_include "$subnet.0/24"
      --mca oob_tcp_if_include "$subnet.0/24")
    # the daemons inherit the whole environment through the agent, and the ranks the
    # daemons'; -x names what must reach the ranks in any case
    for name in $(compgen -e); do
      [[ $kind == plain && $name == SLOWLINK_LD_PRELOAD ]] && continue
      case $name in LOOM_* | SLOWLINK_* | UCX_* | LD_LIBRARY_PATH | PATH) launch+=(-x "$name") ;; esac
    done
  else
    # shellcheck disable=SC2054 # tcp,self is one value
    launch=(mpiexec.mpich -f "$tmp/hosts" -n "$ranks" -ppn 1 -launcher ssh -launcher-exec "$tmp/agent"
      -iface "$prefix-br" -genvall -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES "$dev")
  fi
  ((verbose)) && echo "+ ip netns exec $sw ${launch[*]} $tmp/rank $*" >&2
  local start=$SECONDS verdict_at="" watch=""
  if [[ $kind == plain ]]; then
    watch=$tmp/check.out
    : >"$watch"
    env "${unset[@]}" ip netns exec "$sw" "${launch[@]}" "$tmp/rank" "$@" 9>&- > >(tee "$watch") 2>&1 &
  else
    env "${unset[@]}" ip netns exec "$sw" "${launch[@]}" "$tmp/rank" "$@" 9>&- &
  fi
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if ((timeout > 0 && SECONDS - start >= timeout)); then
      stop_jobs
      wait "$pid" 2>/dev/null || true
      echo "slow-link: --timeout $timeout s reached: ended the job" >&2
      return 124
    fi
    # MPICH over UCX TCP (UCX 1.13) hangs in MPI_Finalize at times with more than two ranks:
    # once the check has given its verdict, it has 10 s to end
    if [[ -n $watch && -z $verdict_at ]] && grep -q '^slow-link check: \(ok\|failed\)' "$watch"; then
      verdict_at=$SECONDS
    fi
    if [[ -n $verdict_at ]] && ((SECONDS - verdict_at >= 10)); then
      stop_jobs
      wait "$pid" 2>/dev/null || true
      sleep 0.2 # lets tee print the launcher's last words first
      echo "slow-link: the check gave its verdict but did not end within 10 s (MPI_Finalize hang of" \
        "UCX TCP, see docs/slow-link.md): ended it; the verdict stands" >&2
      grep -q '^slow-link check: ok' "$watch"
      return
    fi
    sleep 0.2
  done
  wait "$pid"
}

if [[ $mode != nocheck ]]; then
  tol=$(awk -v t="$tolerance" 'BEGIN { printf "%.3f", t / 100 }')
  say "checking the link: set $rate = $rate_mbs MB/s per direction"
  if ! job plain "$tmp/bandwidth" check "$rate_mbs" "$tol"; then
    die "the bandwidth check failed (see above): the emulated link does not run at $rate; nothing timed"
  fi
fi
[[ $mode == check ]] && exit 0
if ((hello)); then
  program=("$tmp/bandwidth" hello)
fi
say "running: ${program[*]}"
status=0
job user "${program[@]}" || status=$?
exit "$status"
