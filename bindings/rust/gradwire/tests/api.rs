//! Single-process tests of the safe API: errors carry gradwire's status and message, handles free
//! themselves, requests borrow their buffers, and the threading rules hold at compile time.
use gradwire::*;

fn runtime() -> Runtime {
    Runtime::with_options(&RuntimeOptions { no_env_overrides: true, ..Default::default() }).unwrap()
}

/// A communicator of one rank (no launcher variables needed).
fn solo(rt: &Runtime) -> Comm {
    Comm::new(rt, &CommOptions { rank: Some(0), world_size: Some(1), local_rank: Some(0), ..Default::default() })
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn versions() {
    assert_eq!(abi_version().0, gradwire::sys::GW_ABI_VERSION_MAJOR);
    assert!(version().starts_with("0."), "{}", version());
}

#[test]
fn a_bad_configuration_is_a_config_error_with_its_location() {
    let e = Runtime::from_toml("[codec]\nnmae = \"int8\"\n").err().unwrap();
    assert_eq!(e.status, Status::Config);
    assert!(e.message.contains("2:") && e.message.contains("name"), "{e}");
    assert!(e.to_string().starts_with("GW_ERR_CONFIG: "), "{e}");
    let e = Runtime::with_options(&RuntimeOptions { config_text: Some("a\0b".into()), ..Default::default() })
        .err()
        .unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
}

#[test]
fn an_unknown_codec_is_not_found_and_lists_what_exists() {
    let rt = runtime();
    let e = rt.codec(Some("int9")).err().unwrap();
    assert_eq!(e.status, Status::NotFound, "{e}");
    assert!(e.message.contains("int9"), "{e}");
}

#[test]
fn plugins_and_config_dump() {
    let rt = runtime();
    let p = rt.plugins().unwrap();
    assert!(p.iter().any(|p| p.name == "int8" && p.error.is_none()), "{p:?}");
    assert!(!rt.search_paths().unwrap().is_empty());
    assert!(rt.config_dump(ConfigFormat::Toml).unwrap().contains("[codec]"));
}

#[test]
fn codec_round_trip_and_bad_buffers() {
    let rt = runtime();
    let mut c = rt.codec(Some("int8")).unwrap();
    drop(rt); // a codec may outlive its runtime
    let x: Vec<f32> = (0..100).map(|i| i as f32 / 10.0).collect();
    let p = c.encode(None, &x).unwrap();
    let mut y = vec![0f32; 100];
    c.decode(None, &p, &mut y, false).unwrap();
    assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.05));
    // wrong-sized output: gradwire's message names the counts
    let mut short = vec![0f32; 99];
    let e = c.decode(None, &p, &mut short, false).unwrap_err();
    assert_eq!(e.status, Status::Mismatch, "{e}");
    assert!(e.message.contains("100") && e.message.contains("99"), "{e}");
    // too small a payload buffer
    let mut tiny = [0u8; 8];
    assert_eq!(c.encode_into(None, &x, &mut tiny).unwrap_err().status, Status::BufferTooSmall);
    // a corrupt payload
    let e = c.decode(None, &p[..20], &mut y, false).unwrap_err();
    assert_eq!(e.status, Status::Corrupt, "{e}");
    c.close().unwrap();
}

#[test]
fn error_feedback_save_and_load() {
    let rt = runtime();
    let mut c = rt.codec(Some("int8")).unwrap();
    let cap = c.max_encoded_size(DType::F32, 10).unwrap();
    let mut ef = c.error_feedback().unwrap();
    let mut p = vec![0u8; cap];
    ef.encode_into(7, None, &[0.3f32; 10], &mut p).unwrap();
    let blob = ef.save().unwrap();
    ef.reset().unwrap();
    ef.load(&blob).unwrap();
    let mut bad = blob.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    assert_eq!(ef.load(&bad).unwrap_err().status, Status::Corrupt);
    // another count for the same buffer id
    assert_eq!(ef.encode_into(7, None, &[0.3f32; 11], &mut p).unwrap_err().status, Status::Mismatch);
}

#[test]
fn one_rank_collectives_blocking_and_nonblocking() {
    let rt = runtime();
    let comm = solo(&rt);
    assert_eq!((comm.rank(), comm.size()), (0, 1));
    let a = [1.0f64, 2.0, 3.0];
    let mut b = [0.0f64; 3];
    comm.allreduce(&a, &mut b, ReduceOp::Sum).unwrap();
    assert_eq!(a, b);
    // wrong-sized output
    let mut c = [0.0f64; 2];
    let e = comm.allreduce(&a, &mut c, ReduceOp::Sum).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("3") && e.message.contains("2"), "{e}");
    // u8 cannot be reduced
    let mut bytes = [1u8, 2];
    assert_eq!(comm.allreduce_in_place(&mut bytes, ReduceOp::Sum).unwrap_err().status, Status::Unsupported);
    let mut x = [5i32, 6];
    let mut y = [0i64; 1];
    let r = comm.scope(|s| {
        let mut r1 = s.allreduce_in_place(&mut x, ReduceOp::Max)?;
        let r2 = s.barrier()?;
        while !r1.test()? {}
        r2.wait()?;
        // dropped unfinished: waits, then frees
        let _r3 = s.allreduce_in_place(&mut y, ReduceOp::Sum)?;
        Ok::<(), Error>(())
    });
    r.unwrap();
    assert_eq!(x, [5, 6]);
}

#[test]
fn a_forgotten_request_is_finished_when_its_scope_ends() {
    let rt = runtime();
    let comm = solo(&rt);
    let mut x = vec![1.0f32; 1 << 16];
    comm.scope(|s| {
        let r = s.allreduce_in_place(&mut x, ReduceOp::Sum).unwrap();
        std::mem::forget(r); // leaks the Request, not the operation: scope waits and frees it
    });
    x[0] = 2.0; // usable again: the compiler knows the scope is over
    comm.close().unwrap(); // GW_ERR_STATE would mean a request was still alive
}

#[test]
fn abort_from_another_thread() {
    let rt = runtime();
    let comm = solo(&rt);
    let h = comm.abort_handle();
    std::thread::spawn(move || h.abort().unwrap()).join().unwrap();
    let mut x = [1.0f32; 4];
    let e = comm.allreduce_in_place(&mut x, ReduceOp::Sum).unwrap_err();
    assert_eq!(e.status, Status::Aborted, "{e}");
    let h = comm.abort_handle();
    drop(comm);
    let e = h.abort().unwrap_err();
    assert_eq!(e.status, Status::State);
}

#[test]
fn threading_rules_hold_at_compile_time() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + std::marker::Sync>() {}
    send::<Comm>();
    send_sync::<Runtime>();
    send_sync::<Codec>();
    send_sync::<AbortHandle>();
    send::<gradwire::Sync<'static>>();
    // Comm is not Sync: this trait is ambiguous (does not compile) for Sync types.
    trait AmbiguousIfSync<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + std::marker::Sync> AmbiguousIfSync<u8> for T {}
    <Comm as AmbiguousIfSync<_>>::check();
    <gradwire::Sync<'static> as AmbiguousIfSync<_>>::check();
}
