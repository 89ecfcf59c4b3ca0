//! The part of `gradwire/plugin.h` (and `types.h`) a codec plugin uses, as `#[repr(C)]` declarations.
//! A plugin never links libgradwire, so it does not depend on `gradwire-sys`; `tests/layout.rs` of this
//! crate checks these layouts against the C header.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_void};

pub type gw_status = i32;
pub const GW_OK: gw_status = 0;
pub const GW_ERR_INVALID_ARGUMENT: gw_status = -1;
pub const GW_ERR_UNSUPPORTED: gw_status = -7;
pub const GW_ERR_CORRUPT: gw_status = -11;
pub const GW_ERR_BUFFER_TOO_SMALL: gw_status = -13;
pub const GW_ERR_INTERNAL: gw_status = -15;

pub type gw_dtype = i32;
pub const GW_DTYPE_F32: gw_dtype = 0;
pub type gw_memory_kind = i32;
pub const GW_MEMORY_HOST: gw_memory_kind = 0;
pub type gw_log_level = i32;
pub type gw_config_type = i32;
pub const GW_CONFIG_BOOL: gw_config_type = 0;
pub type gw_component_kind = i32;
pub const GW_COMPONENT_CODEC: gw_component_kind = 0;

pub const GW_ABI_VERSION_MAJOR: u32 = 1;
pub const GW_ABI_VERSION_MINOR: u32 = 1;
pub const GW_CODEC_STATEFUL: u32 = 1 << 5;
pub const GW_DECODE_ACCUMULATE: u32 = 1 << 0;

#[repr(C)]
pub struct gw_tensor {
    pub struct_size: u32,
    pub memory: gw_memory_kind,
    pub dtype: gw_dtype,
    pub device: i32,
    pub data: *mut c_void,
    pub count: u64,
    pub stream: *mut c_void,
}

#[repr(C)]
pub struct gw_codec_properties {
    pub struct_size: u32,
    pub flags: u32,
    pub sum_dtype: gw_dtype,
    pub dtypes: u32,
}

#[repr(C)]
pub struct gw_codec_context {
    pub struct_size: u32,
    pub seed: u64,
    pub step: u64,
    pub rank: u32,
    pub world_size: u32,
    pub workspace: *mut c_void,
    pub workspace_bytes: u64,
}

/// Opaque: the host's validated configuration of one component.
#[repr(C)]
pub struct gw_config {
    _private: [u8; 0],
}

#[repr(C)]
pub struct gw_host {
    pub struct_size: u32,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub ctx: *mut c_void,
    pub log: Option<unsafe extern "C" fn(*mut c_void, gw_log_level, *const c_char, *const c_char)>,
    pub set_error: Option<unsafe extern "C" fn(*mut c_void, *const c_char)>,
    pub config_get_bool: Option<unsafe extern "C" fn(*const gw_config, *const c_char, *mut i32) -> gw_status>,
    pub config_get_int: Option<unsafe extern "C" fn(*const gw_config, *const c_char, *mut i64) -> gw_status>,
    pub config_get_float: Option<unsafe extern "C" fn(*const gw_config, *const c_char, *mut f64) -> gw_status>,
    pub config_get_string:
        Option<unsafe extern "C" fn(*const gw_config, *const c_char, *mut *const c_char) -> gw_status>,
    pub get_extension: Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> *const c_void>,
}

#[repr(C)]
pub struct gw_config_key {
    pub struct_size: u32,
    pub name: *const c_char,
    pub type_: gw_config_type,
    pub default_value: *const c_char,
    pub help: *const c_char,
    pub min_value: f64,
    pub max_value: f64,
    pub choices: *const c_char,
}

#[repr(C)]
pub struct gw_codec_vtable {
    pub struct_size: u32,
    pub create: Option<unsafe extern "C" fn(*mut c_void, *const gw_host, *const gw_config, *mut *mut c_void) -> gw_status>,
    pub destroy: Option<unsafe extern "C" fn(*mut c_void)>,
    pub properties: Option<unsafe extern "C" fn(*mut c_void, *mut gw_codec_properties) -> gw_status>,
    pub max_encoded_size: Option<unsafe extern "C" fn(*mut c_void, gw_dtype, u64, *mut u64, *mut u64) -> gw_status>,
    pub encode: Option<
        unsafe extern "C" fn(*mut c_void, *const gw_codec_context, *const gw_tensor, *mut c_void, u64, *mut u64)
            -> gw_status,
    >,
    pub decode: Option<
        unsafe extern "C" fn(*mut c_void, *const gw_codec_context, *const c_void, u64, *mut gw_tensor, u32) -> gw_status,
    >,
    pub get_extension: Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> *const c_void>,
}

#[repr(C)]
pub struct gw_component {
    pub struct_size: u32,
    pub kind: gw_component_kind,
    pub name: *const c_char,
    pub help: *const c_char,
    pub config_keys: *const gw_config_key,
    pub num_config_keys: u32,
    pub vtable: *const c_void,
}

#[repr(C)]
pub struct gw_plugin_descriptor {
    pub struct_size: u32,
    pub abi_major: u32,
    pub abi_minor: u32,
    pub name: *const c_char,
    pub version: *const c_char,
    pub description: *const c_char,
    pub init: Option<unsafe extern "C" fn(*const gw_host, *mut *mut c_void) -> gw_status>,
    pub fini: Option<unsafe extern "C" fn(*mut c_void)>,
    pub components: *const gw_component,
    pub num_components: u32,
    pub get_extension: Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> *const c_void>,
}

/// A `static` holding C pointers to other statics (string literals, tables): immutable, so sharing it
/// between threads is sound.
#[repr(transparent)]
pub struct Static<T>(pub T);
// SAFETY: the wrapped descriptors are never written and point only at 'static immutable data.
unsafe impl<T> Sync for Static<T> {}
