//! Compares the size, alignment and field offsets of every `#[repr(C)]` struct, and the value of every
//! constant, with what the C compiler says about gradwire.h (tests/layout_probe.c, compiled here with
//! `$CC` or `cc`).
use gradwire_sys::*;
use std::collections::BTreeSet;
use std::mem::{align_of, size_of, MaybeUninit};
use std::process::Command;

fn sz<T>(_: *const T) -> usize {
    size_of::<T>()
}

macro_rules! size {
    ($out:ident, $t:ident) => {
        $out.insert(format!("size {} {} {}", stringify!($t), size_of::<$t>(), align_of::<$t>()));
    };
}
macro_rules! fields {
    ($out:ident, $t:ident, $($f:ident),+) => {{
        size!($out, $t);
        let v = MaybeUninit::<$t>::uninit();
        let base = v.as_ptr() as usize;
        $(
            // SAFETY: only the field's address is taken, nothing is read.
            let p = unsafe { std::ptr::addr_of!((*v.as_ptr()).$f) };
            $out.insert(format!("field {}.{} {} {}", stringify!($t), stringify!($f), p as usize - base, sz(p)));
        )+
    }};
}
macro_rules! consts {
    ($out:ident, $($c:ident),+) => { $( $out.insert(format!("const {} {}", stringify!($c), $c as i64)); )+ };
}

fn rust_side() -> BTreeSet<String> {
    let mut o = BTreeSet::new();
    fields!(o, gw_tensor, struct_size, memory, dtype, device, data, count, stream);
    fields!(o, gw_codec_properties, struct_size, flags, sum_dtype, dtypes);
    fields!(o, gw_codec_context, struct_size, seed, step, rank, world_size, workspace, workspace_bytes, buffer_id,
            shapes, num_shapes);
    fields!(o, gw_tensor_shape, offset, rows, cols);
    fields!(o, gw_runtime_options, struct_size, config_path, config_text, plugin_paths, num_plugin_paths, log,
            log_user, log_level, flags);
    fields!(o, gw_plugin_info, struct_size, path, status, error, name, version, description, abi_major, abi_minor,
            num_components);
    fields!(o, gw_component_info, struct_size, kind, name, help);
    fields!(o, gw_comm_options, struct_size, rank, world_size, local_rank, root_address, root_port, allgather,
            allgather_user, timeout_s);
    fields!(o, gw_sync_options, struct_size, runtime, flags);
    fields!(o, gw_sync_bucket_info, struct_size, codec, count, num_tensors, flags);
    fields!(o, gw_sync_stats, struct_size, raw_bytes, wire_bytes, compression_ratio, encode_seconds,
            transfer_seconds, decode_seconds, steps, syncs, codec, codec_reason);
    size!(o, gw_status);
    size!(o, gw_dtype);
    size!(o, gw_memory_kind);
    size!(o, gw_reduce_op);
    size!(o, gw_log_level);
    size!(o, gw_config_format);
    consts!(o, GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, GW_OK, GW_IN_PROGRESS, GW_ERR_INVALID_ARGUMENT,
            GW_ERR_NO_MEMORY, GW_ERR_NOT_FOUND, GW_ERR_PLUGIN, GW_ERR_VERSION, GW_ERR_CONFIG, GW_ERR_UNSUPPORTED,
            GW_ERR_TIMEOUT, GW_ERR_MISMATCH, GW_ERR_TRANSPORT, GW_ERR_CORRUPT, GW_ERR_ABORTED,
            GW_ERR_BUFFER_TOO_SMALL, GW_ERR_STATE, GW_ERR_INTERNAL, GW_DTYPE_F32, GW_DTYPE_F64, GW_DTYPE_F16,
            GW_DTYPE_BF16, GW_DTYPE_I32, GW_DTYPE_I64, GW_DTYPE_U8, GW_MEMORY_HOST, GW_MEMORY_CUDA, GW_REDUCE_SUM,
            GW_REDUCE_AVG, GW_REDUCE_MIN, GW_REDUCE_MAX, GW_LOG_ERROR, GW_LOG_WARN, GW_LOG_INFO, GW_LOG_DEBUG,
            GW_LOG_TRACE, GW_CONFIG_FORMAT_TOML, GW_CONFIG_FORMAT_REFERENCE, GW_CODEC_LOSSLESS, GW_CODEC_SPARSE,
            GW_CODEC_SUMMABLE, GW_CODEC_SHARED_INDICES, GW_CODEC_CUDA, GW_CODEC_STATEFUL, GW_CODEC_ROUNDS, GW_DECODE_ACCUMULATE,
            GW_RUNTIME_NO_ENV_OVERRIDES, GW_RUNTIME_INSPECT_ONLY, GW_SYNC_ALL_BUCKETS, GW_SYNC_APPLY,
            GW_SYNC_GRADIENTS_AVERAGED, GW_SYNC_PARAMETERS_AVERAGED, GW_SYNC_OUTER_STEP);
    o
}

fn c_side() -> BTreeSet<String> {
    let dir = std::env::temp_dir().join(format!("gradwire-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("layout_probe");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/layout_probe.c");
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I", env!("GW_SYS_INCLUDE_DIR"), src, "-o"])
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}' ({e}); set CC"));
    assert!(status.success(), "the C layout probe did not compile with {cc}");
    let out = Command::new(&exe).output().expect("run layout_probe");
    assert!(out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.to_string()).collect()
}

#[test]
fn every_struct_and_constant_matches_the_c_header() {
    let r = rust_side();
    let c = c_side();
    assert!(c.len() > 100, "the probe printed too little: {c:?}");
    let only_c: Vec<_> = c.difference(&r).collect();
    let only_rust: Vec<_> = r.difference(&c).collect();
    assert!(
        only_c.is_empty() && only_rust.is_empty(),
        "layout differs from gradwire.h\n  C says:    {only_c:?}\n  Rust says: {only_rust:?}"
    );
}

#[test]
fn init_defaults_carry_their_struct_size() {
    assert_eq!(gw_tensor::default().struct_size as usize, size_of::<gw_tensor>());
    assert_eq!(gw_comm_options::default().rank, -1);
    assert_eq!(gw_codec_context::default().world_size, 1);
    assert_eq!(gw_sync_stats::default().compression_ratio, 1.0);
}

#[test]
fn null_handles_are_refused_with_a_message() {
    // SAFETY: gradwire documents NULL handles as GW_ERR_INVALID_ARGUMENT, destroy functions included.
    unsafe {
        assert_eq!(gw_codec_destroy(std::ptr::null_mut()), GW_ERR_INVALID_ARGUMENT);
        let msg = std::ffi::CStr::from_ptr(gw_last_error()).to_string_lossy().into_owned();
        assert!(!msg.is_empty(), "no message for a NULL codec");
        assert_eq!(gw_abi_version_major(), GW_ABI_VERSION_MAJOR);
    }
}
