//! `ternary`: a gradwire codec plugin written in Rust (a cdylib exporting `gw_plugin_entry`).
//!
//! The codec is in `ternary.rs`, safe Rust. This file is the FFI boundary, the only place with
//! `unsafe`: it turns the host's pointers into slices, runs the codec inside `guard`, which catches a
//! panic and reports it as `GW_ERR_INTERNAL` with its message (a panic never unwinds into C frames), and
//! hands errors to the host through `gw_host.set_error`.
pub mod abi;
pub mod ternary;

use abi::*;
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use ternary::Fail;

/// Reports `message` through the host (copied by the host, kept per thread).
fn set_error(host: *const gw_host, message: &str) {
    if host.is_null() {
        return;
    }
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: host points at the gw_host the runtime passed to create, valid while the codec lives.
    unsafe {
        if let Some(f) = (*host).set_error {
            f((*host).ctx, text.as_ptr());
        }
    }
}

/// Runs one vtable function: its error goes to the host, a panic becomes GW_ERR_INTERNAL.
pub fn guard(host: *const gw_host, what: &str, f: impl FnOnce() -> Result<(), Fail>) -> gw_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => GW_OK,
        Ok(Err(e)) => {
            set_error(host, &e.message);
            e.status
        }
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            set_error(host, &format!("ternary: {what} panicked: {why} (a bug in the plugin; please report it)"));
            GW_ERR_INTERNAL
        }
    }
}

fn invalid(message: &str) -> Fail {
    Fail { status: GW_ERR_INVALID_ARGUMENT, message: format!("ternary: {message}") }
}

struct Codec {
    host: *const gw_host,
    stochastic: bool,
}

unsafe extern "C" fn create(
    _plugin_state: *mut c_void,
    host: *const gw_host,
    config: *const gw_config,
    out: *mut *mut c_void,
) -> gw_status {
    guard(host, "create", || {
        if host.is_null() || out.is_null() {
            return Err(invalid("create got a NULL host or output pointer"));
        }
        let mut stochastic = 1i32;
        // SAFETY: host is valid during create; the key is declared in KEYS.
        let st = match (*host).config_get_bool {
            Some(get) => get(config, b"stochastic\0".as_ptr() as *const c_char, &mut stochastic),
            None => GW_ERR_UNSUPPORTED,
        };
        if st != GW_OK {
            return Err(Fail { status: st, message: "ternary: cannot read [codec.ternary] stochastic".into() });
        }
        let codec = Box::new(Codec { host, stochastic: stochastic != 0 });
        // SAFETY: out checked above.
        *out = Box::into_raw(codec) as *mut c_void;
        Ok(())
    })
}

unsafe extern "C" fn destroy(codec: *mut c_void) {
    if !codec.is_null() {
        // SAFETY: made by Box::into_raw in create, destroyed once by the host.
        drop(Box::from_raw(codec as *mut Codec));
    }
}

/// The codec behind a vtable pointer. SAFETY: `codec` is NULL or what `create` returned.
unsafe fn this<'a>(codec: *mut c_void) -> Option<&'a Codec> {
    (codec as *const Codec).as_ref()
}

unsafe extern "C" fn properties(codec: *mut c_void, out: *mut gw_codec_properties) -> gw_status {
    let c = this(codec);
    guard(c.map_or(std::ptr::null(), |c| c.host), "properties", || {
        let c = c.ok_or_else(|| invalid("NULL codec"))?;
        let out = out.as_mut().ok_or_else(|| invalid("NULL properties"))?;
        // Lossy, dense, not summable: the runtime uses scatter-reduce-allgather.
        out.flags = if c.stochastic { GW_CODEC_STATEFUL } else { 0 };
        out.sum_dtype = GW_DTYPE_F32;
        out.dtypes = 1u32 << GW_DTYPE_F32;
        Ok(())
    })
}

unsafe extern "C" fn max_encoded_size(
    codec: *mut c_void,
    dtype: gw_dtype,
    count: u64,
    body: *mut u64,
    workspace: *mut u64,
) -> gw_status {
    let c = this(codec);
    guard(c.map_or(std::ptr::null(), |c| c.host), "max_encoded_size", || {
        if dtype != GW_DTYPE_F32 {
            return Err(Fail { status: GW_ERR_UNSUPPORTED, message: "ternary: encodes f32 only".into() });
        }
        let body = body.as_mut().ok_or_else(|| invalid("NULL body_bytes"))?;
        let workspace = workspace.as_mut().ok_or_else(|| invalid("NULL workspace_bytes"))?;
        *body = ternary::body_size(count);
        *workspace = 0;
        Ok(())
    })
}

/// The f32 elements of a host tensor. SAFETY: the tensor describes `count` valid elements at `data`.
unsafe fn elements<'a>(t: *const gw_tensor) -> Result<(*mut f32, usize), Fail> {
    let t = t.as_ref().ok_or_else(|| invalid("NULL tensor"))?;
    if t.dtype != GW_DTYPE_F32 || t.memory != GW_MEMORY_HOST {
        return Err(Fail { status: GW_ERR_UNSUPPORTED, message: "ternary: takes f32 host tensors only".into() });
    }
    let n = usize::try_from(t.count).map_err(|_| invalid("tensor too large"))?;
    if n > 0 && t.data.is_null() {
        return Err(invalid("tensor data is NULL"));
    }
    Ok((if n == 0 { std::ptr::NonNull::dangling().as_ptr() } else { t.data as *mut f32 }, n))
}

fn stream(ctx: *const gw_codec_context) -> ternary::Stream {
    // SAFETY: ctx is NULL or the host's context for this call.
    match unsafe { ctx.as_ref() } {
        Some(c) => ternary::Stream { seed: c.seed, step: c.step, rank: c.rank },
        None => ternary::Stream::default(),
    }
}

unsafe extern "C" fn encode(
    codec: *mut c_void,
    ctx: *const gw_codec_context,
    input: *const gw_tensor,
    body: *mut c_void,
    capacity: u64,
    size: *mut u64,
) -> gw_status {
    let c = this(codec);
    guard(c.map_or(std::ptr::null(), |c| c.host), "encode", || {
        let c = c.ok_or_else(|| invalid("NULL codec"))?;
        let (data, n) = elements(input)?;
        if body.is_null() || size.is_null() {
            return Err(invalid("NULL body or size"));
        }
        let cap = usize::try_from(capacity).map_err(|_| invalid("capacity too large"))?;
        // SAFETY: the host hands `n` readable elements and `capacity` writable body bytes.
        let x = std::slice::from_raw_parts(data as *const f32, n);
        let out = std::slice::from_raw_parts_mut(body as *mut u8, cap);
        let written = ternary::encode(x, c.stochastic, stream(ctx), out)?;
        *size = written as u64;
        Ok(())
    })
}

unsafe extern "C" fn decode(
    codec: *mut c_void,
    _ctx: *const gw_codec_context,
    body: *const c_void,
    body_size: u64,
    out: *mut gw_tensor,
    flags: u32,
) -> gw_status {
    let c = this(codec);
    guard(c.map_or(std::ptr::null(), |c| c.host), "decode", || {
        c.ok_or_else(|| invalid("NULL codec"))?;
        let (data, n) = elements(out)?;
        let len = usize::try_from(body_size).map_err(|_| invalid("body too large"))?;
        if len > 0 && body.is_null() {
            return Err(invalid("NULL body"));
        }
        // SAFETY: the host hands `body_size` readable bytes and `n` writable elements.
        let b = if len == 0 { &[][..] } else { std::slice::from_raw_parts(body as *const u8, len) };
        let y = std::slice::from_raw_parts_mut(data, n);
        ternary::decode(b, y, flags & GW_DECODE_ACCUMULATE != 0)
    })
}

static KEYS: Static<[gw_config_key; 1]> = Static([gw_config_key {
    struct_size: std::mem::size_of::<gw_config_key>() as u32,
    name: b"stochastic\0".as_ptr() as *const c_char,
    type_: GW_CONFIG_BOOL,
    default_value: b"true\0".as_ptr() as *const c_char,
    help: b"Round each value to +-scale with probability |x|/scale (unbiased); false rounds to the nearest level.\0"
        .as_ptr() as *const c_char,
    min_value: 1.0,
    max_value: 0.0,
    choices: std::ptr::null(),
}]);

static VTABLE: Static<gw_codec_vtable> = Static(gw_codec_vtable {
    struct_size: std::mem::size_of::<gw_codec_vtable>() as u32,
    create: Some(create),
    destroy: Some(destroy),
    properties: Some(properties),
    max_encoded_size: Some(max_encoded_size),
    encode: Some(encode),
    decode: Some(decode),
    get_extension: None,
});

static COMPONENTS: Static<[gw_component; 1]> = Static([gw_component {
    struct_size: std::mem::size_of::<gw_component>() as u32,
    kind: GW_COMPONENT_CODEC,
    name: b"ternary\0".as_ptr() as *const c_char,
    help: b"Ternary quantization {-s, 0, +s} with stochastic rounding, 2 bits per value (a plugin in Rust).\0".as_ptr()
        as *const c_char,
    config_keys: &KEYS.0 as *const gw_config_key,
    num_config_keys: 1,
    vtable: &VTABLE.0 as *const gw_codec_vtable as *const c_void,
}]);

static DESCRIPTOR: Static<gw_plugin_descriptor> = Static(gw_plugin_descriptor {
    struct_size: std::mem::size_of::<gw_plugin_descriptor>() as u32,
    abi_major: GW_ABI_VERSION_MAJOR,
    abi_minor: GW_ABI_VERSION_MINOR,
    name: b"rust_ternary\0".as_ptr() as *const c_char,
    version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char,
    description: b"A codec plugin written in Rust: ternary quantization with stochastic rounding.\0".as_ptr()
        as *const c_char,
    init: None,
    fini: None,
    components: &COMPONENTS.0 as *const gw_component,
    num_components: 1,
    get_extension: None,
});

/// The plugin's one exported symbol.
#[no_mangle]
pub extern "C" fn gw_plugin_entry(host_abi_major: u32, _host_abi_minor: u32) -> *const gw_plugin_descriptor {
    if host_abi_major == GW_ABI_VERSION_MAJOR {
        &DESCRIPTOR.0
    } else {
        std::ptr::null()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::ffi::CStr;

    thread_local!(static LAST: RefCell<String> = RefCell::new(String::new()));

    unsafe extern "C" fn record(_ctx: *mut c_void, message: *const c_char) {
        let m = CStr::from_ptr(message).to_string_lossy().into_owned();
        LAST.with(|l| *l.borrow_mut() = m);
    }

    fn host() -> gw_host {
        gw_host {
            struct_size: std::mem::size_of::<gw_host>() as u32,
            abi_major: 1,
            abi_minor: 0,
            ctx: std::ptr::null_mut(),
            log: None,
            set_error: Some(record),
            config_get_bool: None,
            config_get_int: None,
            config_get_float: None,
            config_get_string: None,
            get_extension: None,
        }
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let h = host();
        let st = guard(&h, "encode", || {
            let v: Vec<u32> = Vec::new();
            let _ = v[3]; // index out of bounds: panics
            Ok(())
        });
        assert_eq!(st, GW_ERR_INTERNAL);
        let m = LAST.with(|l| l.borrow().clone());
        assert!(m.contains("encode panicked") && m.contains("index out of bounds"), "{m}");
        let st = guard(&h, "decode", || panic!("boom {}", 42));
        assert_eq!(st, GW_ERR_INTERNAL);
        assert!(LAST.with(|l| l.borrow().contains("boom 42")));
    }

    #[test]
    fn errors_reach_the_host() {
        let h = host();
        let st = guard(&h, "decode", || Err(Fail { status: GW_ERR_CORRUPT, message: "bad".into() }));
        assert_eq!(st, GW_ERR_CORRUPT);
        assert_eq!(LAST.with(|l| l.borrow().clone()), "bad");
    }

    #[test]
    fn null_pointers_are_invalid_arguments_not_crashes() {
        // SAFETY: exercising the boundary's own NULL checks.
        unsafe {
            assert_eq!(properties(std::ptr::null_mut(), std::ptr::null_mut()), GW_ERR_INVALID_ARGUMENT);
            assert_eq!(
                decode(std::ptr::null_mut(), std::ptr::null(), std::ptr::null(), 0, std::ptr::null_mut(), 0),
                GW_ERR_INVALID_ARGUMENT
            );
        }
    }

    #[test]
    fn entry_refuses_another_major() {
        assert!(gw_plugin_entry(2, 0).is_null());
        let d = gw_plugin_entry(1, 0);
        assert!(!d.is_null());
        // SAFETY: the static descriptor.
        unsafe { assert_eq!(CStr::from_ptr((*d).name).to_str().unwrap(), "rust_ternary") };
    }
}
