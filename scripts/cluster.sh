#!/usr/bin/env bash
# A cluster on one machine: N network namespaces (one per rank) behind a bridge in a "switch" namespace,
# each rank's link limited by a token bucket on both ends of its veth, addresses from the benchmarking
# range 198.18.0.0/15 only (RFC 2544). Needs root; without it says so and exits 2 so callers fall back to
# loopback. Only tbf, htb and pfifo exist on the kernels this runs on: no netem, so no added delay.
#
#   cluster.sh up N RATE          create ranks 0..N-1 (RATE as tc writes it: 1gbit, 100mbit, ...)
#   cluster.sh down               remove every namespace of this cluster (safe to repeat)
#   cluster.sh exec RANK CMD...   run CMD inside rank RANK's namespace
#   cluster.sh addr RANK          print rank RANK's address
#   cluster.sh run N RATE -- CMD  up, run CMD (with GW_CLUSTER_SIZE set), down again however CMD ends
#   cluster.sh measure RATE [MB]  up 2 ranks, send MB (default 20) from rank 0 to rank 1, print the rate
#   cluster.sh rsh ADDR CMD...    an ssh stand-in for launchers (Open MPI's plm_rsh_agent): runs CMD
#                                 through sh in the namespace whose address is ADDR, with Open MPI's
#                                 session directory of its own (removed by down)
#
# GW_CLUSTER_NAME (default "gwc") prefixes every namespace, so clusters of different users do not meet.
set -Eeuo pipefail

NAME="${GW_CLUSTER_NAME:-gwc}"
SUBNET_PREFIX="198.18.0"      # rank i is 198.18.0.(i+1)/24, inside 198.18.0.0/15
MAX_RANKS=250
SWITCH="${NAME}-sw"

die() { echo "cluster.sh: $*" >&2; exit 1; }
ns_of() { echo "${NAME}-r$1"; }
addr_of() { echo "${SUBNET_PREFIX}.$(( $1 + 1 ))"; }
our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NAME}-(sw|r[0-9]+)$" || true; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "cluster.sh: network namespaces need root (run as root or with sudo); without them use loopback" >&2
    exit 2
  fi
  command -v ip >/dev/null && command -v tc >/dev/null || die "needs ip and tc from iproute2 (scripts/install-deps.sh)"
}

check_rate() {
  [[ "$1" =~ ^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit|tbit)$ ]] ||
    die "rate '$1' is not a tc rate: give a number and a unit, e.g. 1gbit, 10gbit, 100mbit"
}

check_ranks() {
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$MAX_RANKS" ] ||
    die "the number of ranks must be 1..$MAX_RANKS, not '$1'"
}

# Where a rank's launcher daemon (cluster.sh rsh) keeps its session files: each namespace is a host of its
# own, but they share this machine's /tmp and host name, where Open MPI's daemons of one job made and
# removed the same session directory (/tmp/ompi.HOST.UID/jf.N/0) and now and then one failed its mkdir.
SESSIONS="${TMPDIR:-/tmp}/gradwire-cluster"
session_dir() { echo "$SESSIONS/$(ns_of "$1")"; }

down() {
  local ns
  for ns in $(our_namespaces); do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$SESSIONS/${NAME}-"r* 2>/dev/null || true
  rmdir "$SESSIONS" 2>/dev/null || true
}

# A link's burst: what it sends back to back at the veth's speed before the rate holds. A NIC has none,
# so the bucket holds 1 ms of the rate (12.5 KB at 100mbit, 125 KB at 1gbit, 1.25 MB at 10gbit), at
# least 16 KB: a fixed 256 KB let a quarter of a megabyte through at once on a 100mbit link.
burst_of() {
  awk -v r="$1" 'BEGIN {
    match(r, /^[0-9.]+/); v = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
    s = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : (u == "tbit") ? 1e12 : 1
    b = v * s / 8 / 1000; if (b < 16384) b = 16384; printf "%d", b }'
}

limit() {  # namespace, device, rate: a token bucket on the device's egress
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$(burst_of "$3")" latency 50ms
}

up() {
  local n="$1" rate="$2" i ns
  check_ranks "$n"
  check_rate "$rate"
  need_root
  [ -z "$(our_namespaces)" ] || die "a cluster named '$NAME' is already up; run 'cluster.sh down' first (or set GW_CLUSTER_NAME)"
  # Whatever stops the setup half-way (a failing command, Ctrl-C) removes what was built.
  trap 'echo "cluster.sh: setting up failed; removing what was built" >&2; down' EXIT
  trap 'exit 130' INT TERM
  ip netns add "$SWITCH"
  ip -n "$SWITCH" link set lo up
  ip -n "$SWITCH" link add br0 type bridge
  ip -n "$SWITCH" link set br0 up
  for ((i = 0; i < n; i++)); do
    ns="$(ns_of "$i")"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip link add eth0 netns "$ns" type veth peer name "p$i" netns "$SWITCH"
    ip -n "$SWITCH" link set "p$i" master br0
    ip -n "$SWITCH" link set "p$i" up
    ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    limit "$ns" eth0 "$rate"
    limit "$SWITCH" "p$i" "$rate"
  done
  trap - EXIT INT TERM
  echo "cluster.sh: $n ranks up behind a $rate switch: $(addr_of 0) .. $(addr_of $((n - 1))) (namespaces $(ns_of 0) ..)"
}

in_rank() {
  local rank="$1"; shift
  [[ "$rank" =~ ^[0-9]+$ ]] || die "rank must be a number, not '$rank'"
  ip netns list | awk '{print $1}' | grep -qx "$(ns_of "$rank")" || die "rank $rank is not up (cluster.sh up N RATE first)"
  ip netns exec "$(ns_of "$rank")" "$@"
}

measure() {
  local rate="$1" mb="${2:-20}"
  need_root
  up 2 "$rate" >/dev/null
  trap down EXIT
  trap 'exit 130' INT TERM
  local port=5201 out
  out="$(mktemp)"
  in_rank 1 python3 - "$(addr_of 1)" "$port" >"$out" <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
c, _ = s.accept(); total = 0; start = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    if start is None: start = time.monotonic()
    total += len(b)
print(total, time.monotonic() - start)
PY
  local receiver=$!
  sleep 0.5
  in_rank 0 python3 - "$(addr_of 1)" "$port" "$mb" <<'PY'
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
chunk = b"\0" * (1 << 20)
for _ in range(int(sys.argv[3])): c.sendall(chunk)
c.close()
PY
  wait "$receiver"
  python3 - "$rate" $(cat "$out") <<'PY'
import sys, re
rate, total, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
m = re.match(r"([0-9.]+)([kmgt]?)bit", rate)
nominal = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2)]
got = total * 8 / secs
print(f"cluster.sh measure: {total / 1e6:.1f} MB in {secs:.2f} s = {got / 1e6:.1f} Mbit/s "
      f"through a {rate} link ({got / nominal:.2f} of the nominal rate)")
PY
  rm -f "$out"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  up)
    [ $# -eq 2 ] || die "usage: cluster.sh up N RATE   (e.g. cluster.sh up 4 1gbit)"
    up "$1" "$2" ;;
  down)
    need_root
    down ;;
  exec)
    [ $# -ge 2 ] || die "usage: cluster.sh exec RANK CMD..."
    need_root
    in_rank "$@" ;;
  addr)
    [ $# -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]] || die "usage: cluster.sh addr RANK"
    addr_of "$1" ;;
  run)
    [ $# -ge 4 ] && [ "$3" = "--" ] || die "usage: cluster.sh run N RATE -- CMD..."
    n="$1" rate="$2"; shift 3
    up "$n" "$rate"
    trap down EXIT
    trap 'exit 130' INT TERM
    GW_CLUSTER_SIZE="$n" "$@" ;;
  rsh)
    [ $# -ge 2 ] || die "usage: cluster.sh rsh ADDR CMD..."
    need_root
    host="$1"; shift
    [[ "$host" =~ ^${SUBNET_PREFIX//./\\.}\.([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] ||
      die "rsh: '$host' is not a rank's address (${SUBNET_PREFIX}.1 ..)"
    rank=$(( BASH_REMATCH[1] - 1 ))
    mkdir -p "$(session_dir "$rank")"
    in_rank "$rank" env OMPI_MCA_orte_tmpdir_base="$(session_dir "$rank")" sh -c "$*" ;;
  measure)
    [ $# -ge 1 ] || die "usage: cluster.sh measure RATE [MB]"
    check_rate "$1"
    measure "$@" ;;
  *)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 1 ;;
esac
