#!/usr/bin/env bash
# Checks scripts/cluster.sh (given as $1) with its own cluster name: up, addresses, ping across the
# bridge, the token buckets on both ends, teardown, teardown after a failed setup, refusal without root.
set -u  # no pipefail: the refusals below exit non-zero on purpose
cluster="$1"
export GW_CLUSTER_NAME="gwtest$$"
fail() { echo "FAIL: $*" >&2; "$cluster" down >/dev/null 2>&1; exit 1; }
ours() { ip netns list | awk '{print $1}' | grep -c "^${GW_CLUSTER_NAME}-" || true; }

[ "$(id -u)" -eq 0 ] || { echo "not root: skipped"; exit 77; }
command -v ping >/dev/null || { echo "no ping (iputils-ping): skipped"; exit 77; }

"$cluster" up 3 100mbit || fail "up 3 100mbit"
[ "$(ours)" -eq 4 ] || fail "expected 3 rank namespaces and a switch, found $(ours)"
[ "$("$cluster" addr 2)" = 198.18.0.3 ] || fail "rank 2's address"
"$cluster" exec 2 ip -br addr show eth0 | grep -q "198.18.0.3/24" || fail "rank 2 has no 198.18.0.3"
"$cluster" exec 0 ping -c 1 -W 2 198.18.0.3 >/dev/null || fail "rank 0 cannot ping rank 2"
"$cluster" exec 2 ping -c 1 -W 2 198.18.0.2 >/dev/null || fail "rank 2 cannot ping rank 1"
"$cluster" exec 1 tc qdisc show dev eth0 | grep -q "tbf.*rate 100Mbit" || fail "no tbf on rank 1's end"
ip netns exec "${GW_CLUSTER_NAME}-sw" tc qdisc show dev p1 | grep -q "tbf.*rate 100Mbit" || fail "no tbf on the switch's end"
# The bucket holds 1 ms of the rate, at least 16 KB (a fixed 256 KB lets a burst through at 100mbit).
"$cluster" exec 1 tc qdisc show dev eth0 | grep -q "tbf.*burst 16Kb" || fail "100mbit's burst is not 16 KB"
"$cluster" up 2 1gbit 2>&1 | grep -q "already up" || fail "a second up must refuse"
# rsh (Open MPI's launcher agent) runs in the address's namespace, with a session directory of that
# namespace's own (they share this machine's /tmp and host name); down removes it.
[ "$("$cluster" rsh 198.18.0.2 ip -br addr show eth0 | awk '{print $3}')" = 198.18.0.2/24 ] || fail "rsh ran elsewhere"
dir2="$("$cluster" rsh 198.18.0.2 'echo $OMPI_MCA_orte_tmpdir_base')"
dir3="$("$cluster" rsh 198.18.0.3 'echo $OMPI_MCA_orte_tmpdir_base')"
[ -d "$dir2" ] && [ -d "$dir3" ] && [ "$dir2" != "$dir3" ] || fail "rsh's session directories: '$dir2', '$dir3'"
"$cluster" rsh 198.18.0.9 true 2>/dev/null && fail "rsh to an address of no rank succeeded"
"$cluster" down || fail "down"
[ "$(ours)" -eq 0 ] || fail "down left $(ours) namespaces"
[ ! -e "$dir2" ] && [ ! -e "$dir3" ] || fail "down left the session directories"

# A command run inside the cluster: torn down however it ends.
"$cluster" run 1 10gbit -- sh -c 'ip netns exec "${GW_CLUSTER_NAME}-r0" tc qdisc show dev eth0' | grep -q "burst 12[0-9]*b" ||
  fail "10gbit's burst is not 1 ms of the rate (about 1.25 MB)"
"$cluster" run 2 1gbit -- sh -c "exit 3"
[ $? -eq 3 ] || fail "run must return the command's status"
[ "$(ours)" -eq 0 ] || fail "run left $(ours) namespaces"

# A setup that fails half-way removes what it built.
fake="$(mktemp -d)"
printf '#!/bin/sh\nexit 1\n' >"$fake/tc" && chmod +x "$fake/tc"
PATH="$fake:$PATH" "$cluster" up 2 1gbit 2>/dev/null && fail "up with a failing tc succeeded"
rm -rf "$fake"
[ "$(ours)" -eq 0 ] || fail "a failed up left $(ours) namespaces"

# Bad input and no root.
"$cluster" up 2 fast 2>&1 | grep -q "not a tc rate" || fail "bad rate message"
"$cluster" up 0 1gbit 2>&1 | grep -q "must be 1..250" || fail "bad rank count message"
if command -v setpriv >/dev/null; then
  out="$(setpriv --reuid=65534 --regid=65534 --clear-groups "$cluster" up 2 1gbit 2>&1)"
  [ $? -eq 2 ] || fail "without root the exit status must be 2"
  echo "$out" | grep -q "need root" || fail "without root: $out"
fi
echo "cluster.sh: all checks passed"
