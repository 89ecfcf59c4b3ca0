#!/usr/bin/env bash
# `gradwire calibrate` across two hosts of the emulated cluster (given the built command as $1): under
# `gradwire run -n 2 --link 1gbit`, with --inter-only, rank 0 writes the link between the namespaces into
# the model file: [links.inter] measured (its origin says so), made the link between nodes, and the
# delivery of the nominal rate learned from it (GW_LINK_RATE); simulate then prices a nominal 1 Gbit/s
# link with it and says so. With 3 hosts the all-to-all delivery is learned too, and at 10 Gbit/s the
# TCP stack's CPU per byte over the path. Needs root (exit 77).
set -u
gw="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "not root: skipped"; exit 77; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
model="$dir/model.toml"
out="$("$gw" run -n 2 --link 1gbit -- "$gw" calibrate --inter-only -o "$model" 2>&1)"
[ $? -eq 0 ] || fail "calibrate across 2 hosts: $out"
[ -s "$model" ] || fail "no model written: $out"
echo "$out" | grep -q "^\[0\] link inter: .*measured by gradwire calibrate across hosts" || fail "rank 0 did not say the link was measured: $out"
echo "$out" | grep -q "^\[0\] delivery of a nominal rate: TCP delivered 1gbit" || fail "no delivery learned: $out"
echo "$out" | grep -q "^\[1\] .*rank 1 measured the link" || fail "rank 1 said nothing: $out"
python3 - "$model" <<'PY' || fail "the model file: $(cat "$model")"
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
inter = m["links"]["inter"]
assert m["use"]["inter"] == "inter", m["use"]
assert "measured by gradwire calibrate across hosts" in inter["origin"], inter
assert inter["alpha_s"] > 0 and inter["beta_s_per_byte"] > 0, inter
rate = 1 / inter["beta_s_per_byte"]
assert 0.3 * 125e6 < rate < 1.2 * 125e6, f"a 1 Gbit/s link measured at {rate / 1e6:.1f} MB/s"
d = m["delivery"]
assert d["nominal_bytes_per_s"] == [125e6], d
assert abs(d["efficiency"][0] - rate / 125e6) < 1e-9, d
assert "measured by gradwire calibrate across hosts" in d["source"], d
# The rest of the model: the reference model's (no file before), complete.
assert "topk" in m["codecs"] and "machine" in m
PY
sim="$("$gw" simulate --model "$model" --bytes 100e6 --ranks 4 --per-node 1 --inter-rate 1gbit 2>&1)"
[ $? -eq 0 ] || fail "simulate with the measured delivery: $sim"
echo "$sim" | grep -q "inter-node link: nominal rate 1 Gbit/s, of which TCP delivers" || fail "simulate did not apply the delivery: $sim"

# Three hosts: every host sending to the others at once as well; the all-to-all delivery is learned and
# kept beside 1 Gbit/s's point (the file is updated, not replaced).
out="$("$gw" run -n 3 --link 100mbit -- "$gw" calibrate --inter-only -o "$model" 2>&1)"
[ $? -eq 0 ] || fail "calibrate across 3 hosts: $out"
python3 - "$model" <<'PY' || fail "the model file after 3 hosts: $(cat "$model")"
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))["delivery"]
assert d["nominal_bytes_per_s"] == [12.5e6, 125e6], d
assert d["all_to_all_efficiency"][0] > 0 and d["all_to_all_efficiency"][1] == 0, d
PY

# 10 Gbit/s: the cores, not the wire, pace one TCP flow; what the stack costs them per byte over this
# path is learned as a multiple of the host's own tcp link's (delivery cpu_factor), and simulate applies it.
out="$("$gw" run -n 2 --link 10gbit -- "$gw" calibrate --inter-only -o "$model" 2>&1)"
[ $? -eq 0 ] || fail "calibrate across 2 hosts at 10gbit: $out"
echo "$out" | grep -q "^\[0\] delivery of a nominal rate: TCP delivered 10gbit: .*TCP CPU per byte .* times the host's" ||
  fail "no CPU factor learned at 10gbit: $out"
python3 - "$model" <<'PY' || fail "the model file after 10gbit: $(cat "$model")"
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))["delivery"]
assert d["nominal_bytes_per_s"] == [12.5e6, 125e6, 1.25e9], d
assert d["cpu_factor"][2] > 0, d
PY
sim="$("$gw" simulate --model "$model" --bytes 100e6 --ranks 4 --per-node 1 --inter-rate 10gbit 2>&1)"
echo "$sim" | grep -q "inter-node link: nominal rate 10 Gbit/s, .* times the host's TCP CPU per byte" ||
  fail "simulate did not apply the CPU factor: $sim"

# Outside a launched run --inter-only is refused, saying what it needs.
out="$(env -u GW_WORLD_SIZE -u WORLD_SIZE -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE "$gw" calibrate --inter-only -o "$dir/x.toml" 2>&1)"
[ $? -ne 0 ] || fail "--inter-only outside a launched run must fail"
echo "$out" | grep -q "needs a launched run of 2 ranks or more" || fail "unclear refusal: $out"
echo "PASS"
