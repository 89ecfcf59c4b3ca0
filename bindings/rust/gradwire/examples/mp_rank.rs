//! One rank of the Rust binding's multi-rank tests, started by `gradwire run -n 3 -- mp_rank CASE`:
//!   collectives  every collective of every dtype (blocking and nonblocking), checked exactly
//!   compressed   compressed allreduce with int8 and top-k, reduce-scatter and allgather: bit-identical, within bounds
//!   ternary      compressed allreduce with the Rust plugin codec `ternary` (on GRADWIRE_PLUGIN_PATH)
//!   sync         a Sync training loop of a least-squares model; the parameters end bit-identical
//!   mismatch     rank 1 passes another count: every rank gets Status::Mismatch
//! A failed check panics (exit status 101), which makes `gradwire run` fail; the last line is "OK".
use gradwire::*;

const CONFIG: &str = "[runtime]\ntimeout_s = 60\n\
                      [codec.topk]\nratio = 0.05\nselection = \"exact\"\n";

fn runtime(extra: &str) -> Runtime {
    Runtime::from_toml(&format!("{CONFIG}{extra}")).unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// Every rank's copy of `x`, via allgather of its bits, in rank order.
fn gather<T: Element>(comm: &Comm, x: &[T]) -> Vec<Vec<T>> {
    let mut all = vec![T::default(); x.len() * comm.size() as usize];
    comm.allgather(x, &mut all).unwrap();
    all.chunks(x.len().max(1)).map(|c| c.to_vec()).collect()
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

fn same_bits_everywhere(comm: &Comm, x: &[f32], what: &str) {
    let b = bits(x);
    let mine: Vec<i32> = b.iter().map(|v| *v as i32).collect();
    for (r, other) in gather(comm, &mine).iter().enumerate() {
        assert!(other == &mine, "{what}: rank {r} holds other bits than rank {}", comm.rank());
    }
}

/// Allreduce of one dtype: input (rank + 1) * (i % 7 + 1), small integers exact in every type.
fn allreduce_dtype<T: Element + PartialEq + std::fmt::Debug>(comm: &Comm, make: impl Fn(f64) -> T) {
    let n = 1000usize;
    let r = comm.rank() as f64;
    let w = comm.size() as f64;
    let x: Vec<T> = (0..n).map(|i| make((r + 1.0) * (i % 7 + 1) as f64)).collect();
    let mut out = vec![T::default(); n];
    comm.allreduce(&x, &mut out, ReduceOp::Sum).unwrap();
    let sum: Vec<T> = (0..n).map(|i| make(w * (w + 1.0) / 2.0 * (i % 7 + 1) as f64)).collect();
    assert_eq!(out, sum, "{:?} sum", T::DTYPE);
    comm.allreduce(&x, &mut out, ReduceOp::Max).unwrap();
    let max: Vec<T> = (0..n).map(|i| make(w * (i % 7 + 1) as f64)).collect();
    assert_eq!(out, max, "{:?} max", T::DTYPE);
    let mut inplace = x.clone();
    comm.allreduce_in_place(&mut inplace, ReduceOp::Min).unwrap();
    let min: Vec<T> = (0..n).map(|i| make((i % 7 + 1) as f64)).collect();
    assert_eq!(inplace, min, "{:?} min", T::DTYPE);
    // nonblocking, two in flight at once
    let mut a = x.clone();
    let mut b = vec![T::default(); n];
    comm.scope(|s| {
        let ra = s.allreduce_in_place(&mut a, ReduceOp::Sum).unwrap();
        let rb = s.allreduce(&x, &mut b, ReduceOp::Avg).unwrap();
        rb.wait().unwrap();
        ra.wait().unwrap();
    });
    assert_eq!(a, sum, "{:?} nonblocking sum", T::DTYPE);
    let avg: Vec<T> = (0..n).map(|i| make((w + 1.0) / 2.0 * (i % 7 + 1) as f64)).collect();
    assert_eq!(b, avg, "{:?} nonblocking avg", T::DTYPE);
    println!("allreduce {:?} ok", T::DTYPE);
}

fn collectives(comm: &Comm) {
    allreduce_dtype(comm, |v| v as f32);
    allreduce_dtype(comm, |v| v);
    allreduce_dtype(comm, |v| F16::from_f32(v as f32));
    allreduce_dtype(comm, |v| BF16::from_f32(v as f32));
    allreduce_dtype(comm, |v| v as i32);
    allreduce_dtype(comm, |v| v as i64);
    let rank = comm.rank();
    let size = comm.size();
    // u8 moves but does not reduce: broadcast, allgather, allgatherv, send/recv
    let mut b = if rank == 1 { b"from rank 1".to_vec() } else { vec![0u8; 11] };
    comm.broadcast(&mut b, 1).unwrap();
    assert_eq!(b, b"from rank 1");
    let g = gather(comm, &[rank as u8; 3]);
    assert!(g.iter().enumerate().all(|(r, v)| v == &vec![r as u8; 3]));
    let counts: Vec<u64> = (0..size as u64).map(|r| r + 1).collect();
    let mine = vec![rank as u8 + 10; rank as usize + 1];
    let mut packed = vec![0u8; counts.iter().sum::<u64>() as usize];
    comm.allgatherv(&mine, &mut packed, &counts).unwrap();
    let expect: Vec<u8> = (0..size).flat_map(|r| vec![r as u8 + 10; r as usize + 1]).collect();
    assert_eq!(packed, expect);
    // reduce-scatter: block r of the sum lands on rank r
    let x: Vec<i64> = (0..size as i64 * 4).map(|i| i * (rank as i64 + 1)).collect();
    let mut block = [0i64; 4];
    comm.reduce_scatter(&x, &mut block, ReduceOp::Sum).unwrap();
    let k = (size * (size + 1) / 2) as i64;
    let want: Vec<i64> = (0..4).map(|j| (rank as i64 * 4 + j) * k).collect();
    assert_eq!(block.to_vec(), want);
    // a ring of nonblocking send/recv
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let out = [rank as f64; 5];
    let mut inbox = [0f64; 5];
    comm.scope(|s| {
        let rr = s.recv(&mut inbox, prev, 7).unwrap();
        let rs = s.send(&out, next, 7).unwrap();
        rs.wait().unwrap();
        rr.wait().unwrap();
        s.barrier().unwrap().wait().unwrap();
    });
    assert_eq!(inbox, [prev as f64; 5]);
    // Dropping an unfinished request waits for it: rank 0 drops its allreduce at once while the others
    // join later; the communicator stays healthy and rank 0's buffer holds the result.
    let mut v = vec![rank as f32 + 1.0; 64];
    comm.scope(|s| {
        if rank != 0 {
            std::thread::sleep(std::time::Duration::from_millis(300)); // rank 0 drops before we start
        }
        let mut r = s.allreduce_in_place(&mut v, ReduceOp::Sum).unwrap();
        if rank == 0 {
            assert!(r.wait_timeout(0.0).is_ok()); // most likely still running; either answer is fine
            drop(r);
        } else {
            r.wait().unwrap();
        }
    });
    let total = (size * (size + 1) / 2) as f32;
    assert!(v.iter().all(|x| *x == total), "dropped request: {:?}", &v[..4]);
    comm.barrier().unwrap(); // the communicator was not failed by the drop
}

fn compressed(comm: &Comm, rt: &Runtime) {
    let n = 20000usize;
    let r = comm.rank() as f32;
    let size = comm.size() as usize;
    // int8: dense, within the quantization bound of the exact sum
    let x: Vec<f32> = (0..n).map(|i| ((i as f32 * 0.37 + r).sin()) * (1.0 + r)).collect();
    let exact: Vec<f32> = {
        let all = gather(comm, &x);
        (0..n).map(|i| all.iter().map(|v| v[i]).sum()).collect()
    };
    let mut int8 = rt.codec(Some("int8")).unwrap();
    let mut y = vec![0f32; n];
    let ctx = CodecContext { seed: 11, step: 0, ..Default::default() };
    comm.allreduce_compressed(&mut int8, Some(&ctx), &x, &mut y, ReduceOp::Sum).unwrap();
    same_bits_everywhere(comm, &y, "int8");
    let peak = exact.iter().fold(0f32, |m, v| m.max(v.abs()));
    let err = y.iter().zip(&exact).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    // each of the ranks' values and the reduced sum is rounded once to 1/127 of its block's peak
    assert!(err <= peak * (size as f32 + 1.0) / 127.0, "int8 error {err} for peak {peak}");
    println!("compressed int8 ok (max error {err:.4} of peak {peak:.3})");
    // int8 with error feedback inside the collective: what one call drops, the next sends, so the mean
    // of T results of the same input lands far closer to the exact sum than one result's bound.
    let mut int8_ef_codec = rt.codec(Some("int8")).unwrap();
    let mut ef = int8_ef_codec.error_feedback().unwrap();
    let steps = 20usize;
    let mut total = vec![0f64; n];
    for t in 0..steps {
        let ctx = CodecContext { seed: 11, step: t as u64, ..Default::default() };
        if t % 2 == 0 {
            comm.allreduce_compressed_ef(&mut ef, Some(&ctx), &x, &mut y, ReduceOp::Sum).unwrap();
        } else {
            comm.scope(|s| {
                s.allreduce_compressed_ef(&mut ef, Some(&ctx), &x, &mut y, ReduceOp::Sum).unwrap().wait().unwrap();
            });
        }
        same_bits_everywhere(comm, &y, "int8 + error feedback");
        for (acc, v) in total.iter_mut().zip(&y) {
            *acc += *v as f64;
        }
    }
    let mean_err = total.iter().zip(&exact).fold(0f64, |m, (a, b)| m.max((a / steps as f64 - *b as f64).abs()));
    let one_step = peak as f64 * (size as f64 + 1.0) / 127.0;
    assert!(mean_err <= one_step / 16.0, "int8 + EF: mean of {steps} results off by {mean_err}, one step's bound {one_step}");
    println!("compressed int8 + error feedback ok (mean of {steps} off by {mean_err:.5}, one step's bound {one_step:.4})");
    // top-k: 5 % spikes at the same coordinates on every rank dominate; they are all that arrives
    let spikes = |i: usize| i % 20 == 3;
    let x: Vec<f32> =
        (0..n).map(|i| if spikes(i) { 100.0 + i as f32 * 0.001 + r } else { 0.01 * (i as f32 + r).cos() }).collect();
    let mut topk = rt.codec(Some("topk")).unwrap();
    let mut y = vec![0f32; n];
    comm.scope(|s| {
        s.allreduce_compressed(&mut topk, None, &x, &mut y, ReduceOp::Sum).unwrap().wait().unwrap();
    });
    same_bits_everywhere(comm, &y, "topk");
    let all = gather(comm, &x);
    for i in 0..n {
        let want = if spikes(i) { all.iter().fold(0f32, |s, v| s + v[i]) } else { 0.0 };
        assert_eq!(y[i], want, "topk element {i}");
    }
    println!("compressed topk ok");
    // compressed reduce-scatter and allgather: none gives the dense collectives' bits; int8 stays within
    // its bound (each of the other ranks' contributions rounded once), the allgather bit-identical everywhere
    let shard = 999usize;
    let x: Vec<f32> = (0..size * shard).map(|i| ((i as f32 * 0.11 + r).cos()) * (1.0 + r)).collect();
    let mut none = rt.codec(Some("none")).unwrap();
    let (mut a, mut b) = (vec![0f32; shard], vec![0f32; shard]);
    comm.reduce_scatter_compressed(&mut none, None, &x, &mut a, ReduceOp::Sum).unwrap();
    comm.reduce_scatter(&x, &mut b, ReduceOp::Sum).unwrap();
    assert_eq!(bits(&a), bits(&b), "none: reduce_scatter_compressed differs from reduce_scatter");
    comm.scope(|s| {
        s.reduce_scatter_compressed(&mut int8, None, &x, &mut a, ReduceOp::Sum).unwrap().wait().unwrap();
    });
    let peak = size as f32; // |x| <= 1 + rank
    let err = a.iter().zip(&b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
    assert!(err <= peak * (size as f32 - 1.0) / 254.0 * 1.01 + 1e-5, "int8 reduce-scatter error {err}");
    let mut all = vec![0f32; size * shard];
    comm.allgather_compressed(&mut int8, None, &x[..shard], &mut all).unwrap();
    same_bits_everywhere(comm, &all, "int8 allgather");
    let given = gather(comm, &x[..shard]).concat();
    let err = all.iter().zip(&given).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
    assert!(err <= peak / 254.0 * 1.01 + 1e-5, "int8 allgather error {err}");
    comm.scope(|s| {
        s.allgather_compressed(&mut none, None, &x[..shard], &mut all).unwrap().wait().unwrap();
    });
    assert_eq!(bits(&all), bits(&given), "none: allgather_compressed differs from the inputs");
    println!("compressed reduce-scatter and allgather ok");
}

fn ternary(comm: &Comm, rt: &Runtime) {
    let n = 30000usize;
    let r = comm.rank() as f32;
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.01 + r).sin()).collect();
    let mut c = rt.codec(Some("ternary")).unwrap_or_else(|e| panic!("{e}"));
    let mut y = vec![0f32; n];
    let ctx = CodecContext { seed: 5, step: 3, ..Default::default() };
    comm.allreduce_compressed(&mut c, Some(&ctx), &x, &mut y, ReduceOp::Avg).unwrap();
    same_bits_everywhere(comm, &y, "ternary");
    let all = gather(comm, &x);
    let w = comm.size() as f32;
    let exact: Vec<f32> = (0..n).map(|i| all.iter().map(|v| v[i]).sum::<f32>() / w).collect();
    // Unbiased: over many elements the mean error is small against the per-element spread (<= 1).
    let mean_err = y.iter().zip(&exact).map(|(a, b)| (a - b) as f64).sum::<f64>() / n as f64;
    assert!(mean_err.abs() < 0.05, "ternary mean error {mean_err}");
    assert!(y.iter().all(|v| v.is_finite() && v.abs() <= 1.0 + 1e-5), "ternary out of range");
    println!("compressed ternary ok (mean error {mean_err:.5})");
}

/// Least squares: every rank holds its own rows of A and b (b = A w* + noise); gradients averaged
/// through int8 with error feedback; plain gradient descent on the parameter buffer.
fn sync_training(comm: &mut Comm, rt: &Runtime) {
    let d = 256usize;
    let rows = 1024usize;
    let rank = comm.rank() as usize;
    let mut seed = 0x9e37_79b9u64 ^ (rank as u64 * 7919);
    let mut rnd = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    };
    let w_true: Vec<f32> = (0..d).map(|j| (j as f32 * 0.3).cos()).collect();
    let a: Vec<f32> = (0..rows * d).map(|_| rnd()).collect();
    let b: Vec<f32> = (0..rows)
        .map(|i| (0..d).map(|j| a[i * d + j] * w_true[j]).sum::<f32>() + 0.01 * rnd())
        .collect();
    let loss = |w: &[f32]| -> f32 {
        (0..rows).map(|i| ((0..d).map(|j| a[i * d + j] * w[j]).sum::<f32>() - b[i]).powi(2)).sum::<f32>() / rows as f32
    };
    let mut sync = Sync::new(comm, rt).unwrap_or_else(|e| panic!("{e}"));
    let wid = sync.register("w", d, true).unwrap();
    sync.finalize().unwrap();
    let first = loss(sync.parameter(wid).unwrap());
    let lr = 2.0f32;
    for _ in 0..60 {
        let (g, w) = sync.tensor_mut(wid);
        let w = w.unwrap();
        for v in g.iter_mut() {
            *v = 0.0;
        }
        for i in 0..rows {
            let e = (0..d).map(|j| a[i * d + j] * w[j]).sum::<f32>() - b[i];
            for j in 0..d {
                g[j] += 2.0 * e * a[i * d + j] / rows as f32;
            }
        }
        let flags = sync.step().unwrap();
        assert!(flags.gradients_averaged());
        if flags.apply() {
            let (g, w) = sync.tensor_mut(wid);
            for (wj, gj) in w.unwrap().iter_mut().zip(g.iter()) {
                *wj -= lr * gj;
            }
        }
    }
    let w = sync.parameter(wid).unwrap().to_vec();
    let last = loss(&w);
    let stats = sync.stats(None).unwrap();
    assert_eq!(stats.steps, 60);
    assert!(stats.compression_ratio > 1.0, "{stats:?}");
    drop(sync);
    same_bits_everywhere(comm, &w, "trained parameters");
    assert!(last < first * 0.1, "the loss did not fall: {first} -> {last}");
    println!("sync ok: loss {first:.4} -> {last:.5}, compression {:.2}x, {} syncs", stats.compression_ratio, stats.syncs);
}

fn mismatch(comm: &Comm) {
    let n = if comm.rank() == 1 { 5 } else { 4 };
    let mut x = vec![1.0f32; n];
    let e = comm.allreduce_in_place(&mut x, ReduceOp::Sum).unwrap_err();
    assert_eq!(e.status, Status::Mismatch, "{e}");
    assert!(!e.message.is_empty());
    println!("mismatch reported: {e}");
}

fn main() {
    let case = std::env::args().nth(1).unwrap_or_default();
    let extra = if case == "sync" { "[codec]\nname = \"int8\"\nerror_feedback = true\n" } else { "" };
    let rt = runtime(extra);
    let mut comm = Comm::from_env(&rt).unwrap_or_else(|e| panic!("comm: {e}"));
    assert_eq!(comm.size(), 3, "run me under gradwire run -n 3");
    match case.as_str() {
        "collectives" => collectives(&comm),
        "compressed" => compressed(&comm, &rt),
        "ternary" => ternary(&comm, &rt),
        "sync" => sync_training(&mut comm, &rt),
        "mismatch" => mismatch(&comm),
        other => panic!("unknown case '{other}': collectives, compressed, ternary, sync or mismatch"),
    }
    println!("OK rank {}", comm.rank());
}
