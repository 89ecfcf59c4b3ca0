//! `Runtime`: the configuration and the loaded plugins.
use crate::error::{check, cstr, invalid, Result};
use gradwire_sys as sys;
use std::ffi::CString;
use std::os::raw::c_char;
use std::path::PathBuf;

/// Log levels (`gw_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    fn to_raw(self) -> sys::gw_log_level {
        match self {
            LogLevel::Error => sys::GW_LOG_ERROR,
            LogLevel::Warn => sys::GW_LOG_WARN,
            LogLevel::Info => sys::GW_LOG_INFO,
            LogLevel::Debug => sys::GW_LOG_DEBUG,
            LogLevel::Trace => sys::GW_LOG_TRACE,
        }
    }
}

/// What `Runtime::with_options` reads (`gw_runtime_options`). Log lines go to stderr.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// A TOML file; not together with `config_text`.
    pub config_path: Option<PathBuf>,
    /// TOML text.
    pub config_text: Option<String>,
    /// Searched for plugins before everything else.
    pub plugin_paths: Vec<PathBuf>,
    pub log_level: LogLevel,
    /// Ignore `GRADWIRE_<SECTION>_<KEY>` environment overrides.
    pub no_env_overrides: bool,
    /// Create for inspection only (what `gradwire plugins` does).
    pub inspect_only: bool,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            config_path: None,
            config_text: None,
            plugin_paths: Vec::new(),
            log_level: LogLevel::Warn,
            no_env_overrides: false,
            inspect_only: false,
        }
    }
}

/// Whether a plugin loaded, and what it holds.
#[derive(Debug, Clone)]
pub struct PluginInfo {
    pub path: String,
    /// `None` when loaded, else why not.
    pub error: Option<crate::Error>,
    pub name: String,
    pub version: String,
    pub description: String,
    pub abi: (u32, u32),
    pub components: Vec<ComponentInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentKind {
    Codec,
    Schedule,
    Transport,
    Other(u32),
}

#[derive(Debug, Clone)]
pub struct ComponentInfo {
    pub kind: ComponentKind,
    pub name: String,
    pub help: String,
}

/// The configuration format of `Runtime::config_dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// Every key with its value, defaults included.
    Toml,
    /// Markdown reference of every key.
    Reference,
}

/// The configuration and the loaded plugins (`gw_runtime`). Codecs and communicators made from it may
/// outlive it. Every call on it is allowed from any thread, so it is `Send` and `Sync`; dropping it needs
/// no other call in flight, which ownership guarantees.
pub struct Runtime {
    pub(crate) raw: *mut sys::gw_runtime,
}

// SAFETY: gradwire.h: every runtime function is "thread: any"; destroy needs exclusive access (Drop).
unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| invalid(format!("{what} contains a NUL byte; remove it")))
}

fn path_string(what: &str, p: &std::path::Path) -> Result<CString> {
    let s = p.to_str().ok_or_else(|| invalid(format!("{what} {} is not UTF-8", p.display())))?;
    c_string(what, s)
}

impl Runtime {
    /// A runtime with the default configuration, environment overrides applied.
    pub fn new() -> Result<Runtime> {
        Runtime::with_options(&RuntimeOptions::default())
    }

    /// A runtime from TOML text.
    pub fn from_toml(text: &str) -> Result<Runtime> {
        Runtime::with_options(&RuntimeOptions { config_text: Some(text.to_string()), ..Default::default() })
    }

    pub fn with_options(options: &RuntimeOptions) -> Result<Runtime> {
        let path = options.config_path.as_ref().map(|p| path_string("config_path", p)).transpose()?;
        let text = options.config_text.as_ref().map(|t| c_string("config_text", t)).transpose()?;
        let plugin_paths = options
            .plugin_paths
            .iter()
            .map(|p| path_string("plugin path", p))
            .collect::<Result<Vec<_>>>()?;
        let plugin_ptrs: Vec<*const c_char> = plugin_paths.iter().map(|p| p.as_ptr()).collect();
        let mut o = sys::gw_runtime_options {
            config_path: path.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            config_text: text.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
            plugin_paths: if plugin_ptrs.is_empty() { std::ptr::null() } else { plugin_ptrs.as_ptr() },
            num_plugin_paths: plugin_ptrs.len() as u32,
            log_level: options.log_level.to_raw(),
            ..Default::default()
        };
        if options.no_env_overrides {
            o.flags |= sys::GW_RUNTIME_NO_ENV_OVERRIDES;
        }
        if options.inspect_only {
            o.flags |= sys::GW_RUNTIME_INSPECT_ONLY;
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: o and every string it points to live across the call; raw is written on success.
        check(unsafe { sys::gw_runtime_create(&o, &mut raw) })?;
        Ok(Runtime { raw })
    }

    /// The effective configuration (TOML) or the reference of every key (Markdown).
    pub fn config_dump(&self, format: ConfigFormat) -> Result<String> {
        let f = match format {
            ConfigFormat::Toml => sys::GW_CONFIG_FORMAT_TOML,
            ConfigFormat::Reference => sys::GW_CONFIG_FORMAT_REFERENCE,
        };
        let mut len = 0usize;
        // SAFETY: buf NULL asks only for the length.
        check(unsafe { sys::gw_runtime_config_dump(self.raw, f, std::ptr::null_mut(), 0, &mut len) })?;
        let mut buf = vec![0u8; len + 1];
        // SAFETY: buf has len + 1 bytes.
        check(unsafe { sys::gw_runtime_config_dump(self.raw, f, buf.as_mut_ptr() as *mut c_char, buf.len(), &mut len) })?;
        buf.truncate(len);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Every plugin file discovery found, loaded or not.
    pub fn plugins(&self) -> Result<Vec<PluginInfo>> {
        let mut n = 0u32;
        // SAFETY: valid handle, out pointer.
        check(unsafe { sys::gw_runtime_plugin_count(self.raw, &mut n) })?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut info = sys::gw_plugin_info::default();
            // SAFETY: info has its struct_size; strings stay valid while the runtime lives, copied below.
            check(unsafe { sys::gw_runtime_plugin_info(self.raw, i, &mut info) })?;
            let mut components = Vec::new();
            for c in 0..info.num_components {
                let mut ci = sys::gw_component_info::default();
                // SAFETY: as above.
                check(unsafe { sys::gw_runtime_component_info(self.raw, i, c, &mut ci) })?;
                components.push(ComponentInfo {
                    kind: match ci.kind {
                        0 => ComponentKind::Codec,
                        1 => ComponentKind::Schedule,
                        2 => ComponentKind::Transport,
                        k => ComponentKind::Other(k),
                    },
                    // SAFETY: library strings, valid while the runtime lives.
                    name: unsafe { cstr(ci.name) },
                    help: unsafe { cstr(ci.help) },
                });
            }
            // SAFETY: library strings, valid while the runtime lives.
            unsafe {
                out.push(PluginInfo {
                    path: cstr(info.path),
                    error: if info.status == sys::GW_OK {
                        None
                    } else {
                        Some(crate::Error::new(crate::Status::from_raw(info.status), cstr(info.error)))
                    },
                    name: cstr(info.name),
                    version: cstr(info.version),
                    description: cstr(info.description),
                    abi: (info.abi_major, info.abi_minor),
                    components,
                });
            }
        }
        Ok(out)
    }

    /// The directories and files searched for plugins, in order.
    pub fn search_paths(&self) -> Result<Vec<String>> {
        let mut n = 0u32;
        // SAFETY: valid handle, out pointer.
        check(unsafe { sys::gw_runtime_search_path_count(self.raw, &mut n) })?;
        (0..n)
            .map(|i| {
                let mut p = std::ptr::null();
                // SAFETY: the string stays valid while the runtime lives; copied at once.
                check(unsafe { sys::gw_runtime_search_path(self.raw, i, &mut p) })?;
                Ok(unsafe { cstr(p) })
            })
            .collect()
    }

    /// Creates the codec `name` with its `[codec.<name>]` configuration (`None`: the `[codec]` name).
    pub fn codec(&self, name: Option<&str>) -> Result<crate::Codec> {
        crate::Codec::create(self, name)
    }

    /// Destroys the runtime now, reporting an error instead of ignoring it as `Drop` does.
    pub fn close(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: raw is owned and no call is in flight (we had ownership).
        check(unsafe { sys::gw_runtime_destroy(raw) })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe {
            sys::gw_runtime_destroy(self.raw);
        }
    }
}
