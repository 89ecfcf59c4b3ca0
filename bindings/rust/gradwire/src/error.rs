//! `gradwire::Error`: the status of a failed call and gradwire's message (what was wrong, what to do).
use gradwire_sys as sys;
use std::ffi::CStr;
use std::fmt;

/// gradwire's status codes (`gw_status`), errors only. `Other` keeps a code this binding does not know
/// (a newer library).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    NoMemory,
    NotFound,
    Plugin,
    Version,
    Config,
    Unsupported,
    Timeout,
    Mismatch,
    Transport,
    Corrupt,
    Aborted,
    BufferTooSmall,
    State,
    Internal,
    Other(i32),
}

impl Status {
    pub fn from_raw(code: sys::gw_status) -> Status {
        match code {
            sys::GW_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::GW_ERR_NO_MEMORY => Status::NoMemory,
            sys::GW_ERR_NOT_FOUND => Status::NotFound,
            sys::GW_ERR_PLUGIN => Status::Plugin,
            sys::GW_ERR_VERSION => Status::Version,
            sys::GW_ERR_CONFIG => Status::Config,
            sys::GW_ERR_UNSUPPORTED => Status::Unsupported,
            sys::GW_ERR_TIMEOUT => Status::Timeout,
            sys::GW_ERR_MISMATCH => Status::Mismatch,
            sys::GW_ERR_TRANSPORT => Status::Transport,
            sys::GW_ERR_CORRUPT => Status::Corrupt,
            sys::GW_ERR_ABORTED => Status::Aborted,
            sys::GW_ERR_BUFFER_TOO_SMALL => Status::BufferTooSmall,
            sys::GW_ERR_STATE => Status::State,
            sys::GW_ERR_INTERNAL => Status::Internal,
            other => Status::Other(other),
        }
    }

    pub fn to_raw(self) -> sys::gw_status {
        match self {
            Status::InvalidArgument => sys::GW_ERR_INVALID_ARGUMENT,
            Status::NoMemory => sys::GW_ERR_NO_MEMORY,
            Status::NotFound => sys::GW_ERR_NOT_FOUND,
            Status::Plugin => sys::GW_ERR_PLUGIN,
            Status::Version => sys::GW_ERR_VERSION,
            Status::Config => sys::GW_ERR_CONFIG,
            Status::Unsupported => sys::GW_ERR_UNSUPPORTED,
            Status::Timeout => sys::GW_ERR_TIMEOUT,
            Status::Mismatch => sys::GW_ERR_MISMATCH,
            Status::Transport => sys::GW_ERR_TRANSPORT,
            Status::Corrupt => sys::GW_ERR_CORRUPT,
            Status::Aborted => sys::GW_ERR_ABORTED,
            Status::BufferTooSmall => sys::GW_ERR_BUFFER_TOO_SMALL,
            Status::State => sys::GW_ERR_STATE,
            Status::Internal => sys::GW_ERR_INTERNAL,
            Status::Other(code) => code,
        }
    }

    /// The library's name of the status, e.g. "GW_ERR_CONFIG".
    pub fn name(self) -> String {
        // SAFETY: gw_status_string returns static storage for any value.
        unsafe { cstr(sys::gw_status_string(self.to_raw())) }
    }
}

/// A failed gradwire call: its status and the message gradwire gave (`gw_last_error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Copies a C string the library owns; "" for NULL.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
pub(crate) unsafe fn cstr(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Turns a status into a Result, reading gw_last_error on this thread right away (it is valid only until
/// the next gradwire call on the thread).
pub(crate) fn check(code: sys::gw_status) -> Result<()> {
    if code == sys::GW_OK {
        return Ok(());
    }
    // SAFETY: gw_last_error returns a valid string for this thread.
    let message = unsafe { cstr(sys::gw_last_error()) };
    Err(Error { status: Status::from_raw(code), message })
}

/// Like `check`, for functions that may also answer GW_IN_PROGRESS: Ok(true) done, Ok(false) running.
pub(crate) fn check_progress(code: sys::gw_status) -> Result<bool> {
    if code == sys::GW_IN_PROGRESS {
        return Ok(false);
    }
    check(code).map(|_| true)
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArgument, message)
}
