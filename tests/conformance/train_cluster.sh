#!/usr/bin/env bash
# train_cluster.sh CLI PLUGIN_DIR: `gradwire train` on 4 ranks in the emulated cluster (each rank in its
# own network namespace behind 1 Gbit/s links) over the example transport, found in PLUGIN_DIR. Checks
# that every rank connected over tcp_example and that training finished. Needs root (exit 77 otherwise)
# and the Fashion-MNIST files (dataset-fashion-mnist; exit 77 when absent).
set -u
cli=$1 dir=$2
[ "$(id -u)" -eq 0 ] || { echo "not root: skipped"; exit 77; }
[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || { echo "no dataset-fashion-mnist: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[transport]\ninter = "tcp_example"\n' > "$work/tcp.toml"
out=$(GRADWIRE_RUNTIME_LOG_LEVEL=info GRADWIRE_PLUGIN_PATH="$dir" "$cli" train --ranks 4 --link 1gbit \
      --config "$work/tcp.toml" --configs int8 --epochs 1 --train-images 2000 --test-images 500 --out "$work/out" 2>&1)
status=$?
echo "$out" | grep -v "^\[[0-9]\] \(int8\|gradwire info\)" | tail -12
[ $status -eq 0 ] || { echo "$out"; echo "FAIL: train exited with $status"; exit 1; }
n=$(grep -c "connected over tcp_example" <<< "$out")
[ "$n" -eq 4 ] || { echo "FAIL: $n of 4 ranks connected over tcp_example"; exit 1; }
grep -q "^int8 " "$work/out/table.txt" || { echo "FAIL: no int8 row in the table"; exit 1; }
echo "ok: 4 ranks trained over tcp_example behind 1 Gbit/s links"
