//! The README's example: `gradwire run -n 3 -- readme`.
use gradwire::{Comm, ReduceOp, Runtime, Sync};

fn main() -> Result<(), gradwire::Error> {
    let rt = Runtime::from_toml("[codec]\nname = \"int8\"\n")?; // gradients through int8
    let mut comm = Comm::from_env(&rt)?; // rank and world size from `gradwire run`
    let mut sync = Sync::new(&mut comm, &rt)?;
    let grad = sync.register("layer.weight", 1 << 16, false)?;
    sync.finalize()?;
    sync.gradient_mut(grad).iter_mut().for_each(|g| *g = 1.5); // your backward pass
    sync.step()?; // averaged across ranks, int8 on the wire
    println!("ratio {:.2}x", sync.stats(None)?.compression_ratio);
    drop(sync);
    let mut x = vec![1.0f32; 4];
    comm.allreduce_in_place(&mut x, ReduceOp::Sum)?; // uncompressed collectives too
    println!("rank {} of {}: sum {}", comm.rank(), comm.size(), x[0]);
    Ok(())
}
