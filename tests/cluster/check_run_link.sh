#!/usr/bin/env bash
# `gradwire run --link` (given the built command as $1): every rank in its own namespace of the emulated
# cluster with UCX set to TCP on its veth and the root at rank 0's address; the namespaces gone however
# the ranks end; a bad rate refused; without root a message and loopback. Needs root (exit 77 otherwise).
set -u
gw="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
# The clusters a command announced in its output ("namespaces gw123-r0 .."), by prefix: none of their
# namespaces may remain. Only its own are looked at, so another job's clusters on the machine (a second
# test run, a benchmark) do not count.
gone() {  # gone OUTPUT WHAT
  local prefixes p
  prefixes="$(grep -o 'namespaces gw[0-9]*-' <<< "$1" | sed 's/^namespaces //' | sort -u)"
  [ -n "$prefixes" ] || fail "$2 announced no cluster: $1"
  for p in $prefixes; do
    ip netns list 2>/dev/null | awk '{print $1}' | grep -q "^$p" && fail "$2 left namespaces ${p}* behind"
  done
  return 0
}

[ "$(id -u)" -eq 0 ] || { echo "not root: skipped"; exit 77; }
out="$("$gw" run -n 2 --link 100mbit -- sh -c \
  'echo "env $GW_RANK $GW_ROOT_ADDR $UCX_TLS $UCX_NET_DEVICES $GW_LINK_RATE"; ip -br addr show eth0; tc qdisc show dev eth0' 2>&1)"
[ $? -eq 0 ] || fail "run --link: $out"
echo "$out" | grep -q "^\[0\] env 0 198.18.0.1 tcp eth0 100mbit" || fail "rank 0's environment: $out"
echo "$out" | grep -q "^\[1\] env 1 198.18.0.1 tcp eth0 100mbit" || fail "rank 1's environment: $out"
echo "$out" | grep -q "^\[1\] eth0.*198.18.0.2/24" || fail "rank 1 is not at 198.18.0.2: $out"
echo "$out" | grep -q "^\[0\] qdisc tbf.*rate 100Mbit" || fail "no token bucket on rank 0's link: $out"
gone "$out" "run --link"

# Nodes: with --ranks-per-node 2, ranks 0 and 1 share node 0's namespace, address and link, rank 2 is
# alone on node 1; GW_NODE_ID / GW_LOCAL_RANK / GW_LOCAL_SIZE say so.
out="$("$gw" run -n 3 --ranks-per-node 2 --link 100mbit -- sh -c \
  'echo "node $GW_RANK $GW_NODE_ID $GW_LOCAL_RANK $GW_LOCAL_SIZE"; ip -br addr show eth0' 2>&1)"
[ $? -eq 0 ] || fail "run --ranks-per-node: $out"
echo "$out" | grep -q "^\[1\] node 1 0 1 2" || fail "rank 1 is not node 0's local rank 1 of 2: $out"
echo "$out" | grep -q "^\[2\] node 2 1 0 1" || fail "rank 2 is not node 1's local rank 0 of 1: $out"
echo "$out" | grep -q "^\[1\] eth0.*198.18.0.1/24" || fail "rank 1 does not share node 0's address: $out"
echo "$out" | grep -q "^\[2\] eth0.*198.18.0.2/24" || fail "rank 2 is not at node 1's address: $out"
gone "$out" "run --ranks-per-node"

# A failing rank: its status, and nothing left behind (the other rank is stopped).
# The surviving rank sleeps for a duration no other process on the machine uses (pgrep looks machine-wide).
nap="29.$$"
out="$("$gw" run -n 2 --link 1gbit -- sh -c 'if [ "$GW_RANK" = 1 ]; then exit 3; fi; sleep "$0"' "$nap" 2>&1)"
[ $? -eq 3 ] || fail "a failing rank's status must come back"
gone "$out" "a failed run"
pgrep -f "sleep $nap" >/dev/null && fail "a rank outlived the run"

# Ranks talking over the links through UCX (every codec) and Open MPI over TCP: P5 on 4 MB.
out="$("$gw" bench --suite P5 --quick --repetitions 1 --link 1gbit --json 2>&1)"
[ $? -eq 0 ] || fail "bench P5 --quick --link 1gbit: $out"
echo "$out" | grep '"suite":"P5"' | grep -q '"link":"1gbit"' || fail "P5 did not run behind the links: $out"
[ "$(echo "$out" | grep -c '"suite":"P5"')" -eq 7 ] || fail "P5 must report every codec: $out"
# The links' all-to-all rate, measured beside the single transfer (4 ranks all sending at once).
[ "$(echo "$out" | grep '"suite":"P5"' | grep -c '"all_to_all_mb_per_s":[1-9]')" -eq 7 ] ||
  fail "P5 must report the links' all-to-all rate with 4 ranks: $out"
# The ranks' own transport driven as a ring allreduce's pass (every rank sends to the next at once, step
# after step): its rate per rank is positive and at most the link's (1 Gbit/s: 125 MB/s, with a tenth
# for the emulation's bursts). Where its CPU per byte is not the one used (the link, not the cores, paced
# the pass), the wire is priced at the slower of the plain transfer and the pass, else at the transfer's.
echo "$out" | grep '"suite":"P5"' | python3 -c '
import json, sys
for line in sys.stdin:
    x = json.loads(line)
    assert 0 < x["ring_mb_per_s"] <= 137.5, x
    assert x["ring_cpu_ns_per_byte"] > 0, x
    used_probe = x["link_cpu_ns_per_byte"] == x["probe_cpu_ns_per_byte"]
    wire = min(x["link_mb_per_s"], x["ring_mb_per_s"]) if used_probe else x["link_mb_per_s"]
    assert abs(x["wire_mb_per_s"] - wire) <= 1e-9 * wire, x
' || fail "P5 must report the ring pass of the ranks' transport, within the link's rate, and the wire rate it implies: $out"
gone "$out" "bench P5"

# Training from the data cache behind the links: each rank holds a third of the training set and draws
# the rest of every batch from the other namespaces over TCP.
out_dir="$(mktemp -d)"
out="$("$gw" train --ranks 3 --link 1gbit --epochs 1 --batch 60 --hidden 64 --train-images 3000 --test-images 1000 \
  --evals-per-epoch 1 --configs none --cache --out "$out_dir" 2>&1)"
[ $? -eq 0 ] || fail "train --cache --link 1gbit: $out"
echo "$out" | grep -q "behind 1gbit links" || fail "train --cache did not run behind the links: $out"
python3 - "$out_dir/none.json" <<'PY' || fail "train --cache --link 1gbit: wrong accounting or accuracy: $out"
import json, sys
j = json.load(open(sys.argv[1]))
c, acc = j["data"]["cache"], j["curve"][-1]["test_accuracy"]
sample = 784 + 1
assert c["bytes_private"] == 1000 * sample, c       # rank 0's third
assert c["gets"] == 50, c                            # 50 steps
assert c["bytes_fetched"] + c["bytes_local"] == 50 * 20 * sample, c
assert c["bytes_fetched"] > 1.5 * c["bytes_local"], c
assert acc >= 0.6, acc
PY
rm -rf "$out_dir"
gone "$out" "train --cache --link"

# Bad input, and no root.
out="$("$gw" run -n 2 --link fast -- true 2>&1)"
[ $? -ne 0 ] && echo "$out" | grep -q "not a link rate" || fail "bad rate: $out"
if command -v setpriv >/dev/null; then
  out="$(setpriv --reuid=65534 --regid=65534 --clear-groups "$gw" run -n 1 --link 1gbit -- sh -c 'echo "addr ${GW_ROOT_ADDR}"' 2>&1)"
  [ $? -eq 0 ] || fail "without root the run must go on, on loopback: $out"
  echo "$out" | grep -q "needs root" || fail "without root, no message: $out"
  echo "$out" | grep -q "addr 127.0.0.1" || fail "without root the ranks must use loopback: $out"
fi
echo "gradwire run --link: all checks passed"
