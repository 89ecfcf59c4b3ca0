#!/usr/bin/env python3
"""G2, the peer's side: torch.topk on the same 2^28 f32 values that gw_gpu_g2 encoded, on the same GPU.

Reads what `gw_gpu_g2 <plugin-dir> <dump-dir>` wrote into dump-dir (x.f32, ours.u32, ours.json), times
torch.topk(|x|, k, sorted=False) with CUDA events (median of 7 runs after 2 warm-up runs; |x| computed
once outside the timing, so the peer is not charged for it), and prints, one labelled line per figure:
the peer's time, the ratio (torch time / our time, > 1: ours is faster; target >= 5), the recall of our
selection under P2's rule (selected elements whose |x| reaches torch's k-th largest magnitude, capped
at k, over k; target >= 0.99), the recall against torch's exact index set, and the selected count
against [0.9k, 1.1k]; then one JSON line in the `gradwire bench --json` shape (benchmarks.md).

Exit status: 0 when the comparison ran (targets missed are reported, not failed) or when torch / a
CUDA device is missing (said clearly: our figures were printed by gw_gpu_g2 already); 1 when the
dump is missing or malformed, or the count is outside the window.
"""
import json
import os
import statistics
import sys

WARMUP = 2
REPS = 7


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: g2_torch_topk.py <dump-dir written by gw_gpu_g2>")
        return 1
    dump = sys.argv[1]
    try:
        with open(os.path.join(dump, "ours.json"), encoding="utf-8") as f:
            ours = json.load(f)
    except (OSError, ValueError) as e:
        print(f"G2 error: cannot read our figures from {dump}/ours.json ({e}); did gw_gpu_g2 run with this dump dir?")
        return 1
    n, k, count, ours_ms = int(ours["n"]), int(ours["k"]), int(ours["count"]), float(ours["ours_ms"])

    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"G2 peer NOT MEASURED: cannot import torch/numpy ({e}); our time above ({ours_ms:.3f} ms) stands alone")
        return 0
    if not torch.cuda.is_available():
        print(f"G2 peer NOT MEASURED: torch {torch.__version__} sees no CUDA device; "
              f"our time above ({ours_ms:.3f} ms) stands alone")
        return 0

    x_host = np.fromfile(os.path.join(dump, "x.f32"), dtype=np.float32)
    ours_idx_host = np.fromfile(os.path.join(dump, "ours.u32"), dtype=np.uint32)
    if x_host.size != n or ours_idx_host.size != count:
        print(f"G2 error: dump holds {x_host.size} values and {ours_idx_host.size} indices, "
              f"expected {n} and {count}")
        return 1

    dev = torch.device("cuda")
    x = torch.from_numpy(x_host).to(dev)
    del x_host
    mag = x.abs()
    torch.cuda.synchronize()

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    values = indices = None
    for r in range(WARMUP + REPS):
        start.record()
        values, indices = torch.topk(mag, k, sorted=False)
        end.record()
        end.synchronize()
        if r >= WARMUP:
            times.append(start.elapsed_time(end))
    peer_ms = statistics.median(times)
    spread = (max(times) - min(times)) / peer_ms if peer_ms > 0 else 0.0

    # The same call with |x| inside the timing, for information (what a user would write).
    with_abs = []
    for r in range(WARMUP + REPS):
        start.record()
        torch.topk(x.abs(), k, sorted=False)
        end.record()
        end.synchronize()
        if r >= WARMUP:
            with_abs.append(start.elapsed_time(end))

    # Recall: P2's rule (threshold = torch's k-th largest magnitude) and against torch's index set.
    threshold = values.min()
    ours_idx = torch.from_numpy(ours_idx_host.astype(np.int64)).to(dev)
    hits = int((mag[ours_idx] >= threshold).sum().item())
    recall = min(hits, k) / k
    member = torch.zeros(n, dtype=torch.bool, device=dev)
    member[indices] = True
    recall_set = int(member[ours_idx].sum().item()) / k
    count_ok = k - k // 10 <= count <= k + k // 10
    ratio = peer_ms / ours_ms

    gpu = torch.cuda.get_device_name(0)
    print(f"G2 peer: torch.topk(|x|, k, sorted=False) median {peer_ms:.3f} ms (spread {spread:.2f}, {REPS} runs, "
          f"torch {torch.__version__}, {gpu}); with |x| inside the timing {statistics.median(with_abs):.3f} ms")
    print(f"G2 ratio (torch time / our time): {ratio:.2f} (target >= 5: {'met' if ratio >= 5 else 'NOT MET'})")
    print(f"G2 recall (P2 rule, |x| >= torch's k-th magnitude): {recall:.5f} "
          f"(target >= 0.99: {'met' if recall >= 0.99 else 'NOT MET'})")
    print(f"G2 recall against torch's exact index set: {recall_set:.5f}")
    print(f"G2 selected count: {count} = {count / k:.4f} k (window [0.9k, 1.1k]: {'inside' if count_ok else 'OUTSIDE'})")
    print(json.dumps({
        "suite": "G2",
        "case": "topk 1% of 2^28 f32 (GPU)",
        "ours": ours_ms,
        "peer": peer_ms,
        "unit": "ms",
        "ratio": ratio,
        "peer_name": "torch.topk(|x|, k, sorted=False)",
        "k": k,
        "count": count,
        "count_ok": count_ok,
        "recall": recall,
        "recall_vs_torch_set": recall_set,
        "spread_ours": ours["ours_spread"],
        "spread_peer": spread,
        "device": gpu,
        "target": "ratio >= 5, recall >= 0.99, count in [0.9k, 1.1k]",
    }))
    return 0 if count_ok else 1


if __name__ == "__main__":
    sys.exit(main())
