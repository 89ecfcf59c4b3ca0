//! `Codec` (a compressor on its own) and `ErrorFeedback` (residual-carrying encoding around a codec).
use crate::dtype::{tensor, tensor_mut, DType, Element};
use crate::error::{check, cstr, Result};
use crate::runtime::{c_string, Runtime};
use gradwire_sys as sys;
use std::os::raw::c_void;

/// The per-call context of a codec (`gw_codec_context` without the workspace, which the runtime
/// manages): the seed and step every rank passes alike, this rank and the world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecContext {
    pub seed: u64,
    pub step: u64,
    pub rank: u32,
    pub world_size: u32,
}

impl Default for CodecContext {
    fn default() -> Self {
        CodecContext { seed: 0, step: 0, rank: 0, world_size: 1 }
    }
}

impl CodecContext {
    pub(crate) fn raw(&self) -> sys::gw_codec_context {
        sys::gw_codec_context {
            seed: self.seed,
            step: self.step,
            rank: self.rank,
            world_size: self.world_size,
            ..Default::default()
        }
    }
}

pub(crate) fn ctx_ptr(raw: &Option<sys::gw_codec_context>) -> *const sys::gw_codec_context {
    raw.as_ref().map_or(std::ptr::null(), |c| c as *const _)
}

/// What a codec is (`gw_codec_properties`): `flags` holds the `gradwire_sys::GW_CODEC_*` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecProperties {
    pub flags: u32,
    pub sum_dtype: sys::gw_dtype,
    /// bit (1 << gw_dtype) for every accepted input dtype
    pub dtypes: u32,
}

impl CodecProperties {
    pub fn lossless(&self) -> bool {
        self.flags & sys::GW_CODEC_LOSSLESS != 0
    }
    pub fn sparse(&self) -> bool {
        self.flags & sys::GW_CODEC_SPARSE != 0
    }
    pub fn accepts(&self, d: DType) -> bool {
        self.dtypes & (1u32 << d.to_raw()) != 0
    }
}

/// A codec instance (`gw_codec`). May outlive the runtime it came from. Encoding and decoding take
/// `&mut self` (the C rule is one call per codec at a time); properties and sizes are `&self`.
pub struct Codec {
    pub(crate) raw: *mut sys::gw_codec,
}

// SAFETY: gradwire.h: properties/name/max_encoded_size are "thread: any"; encode/decode
// "thread: serialized" (guaranteed by &mut self); destroy "thread: exclusive" (Drop).
unsafe impl Send for Codec {}
unsafe impl Sync for Codec {}

impl Codec {
    pub(crate) fn create(rt: &Runtime, name: Option<&str>) -> Result<Codec> {
        let n = name.map(|n| c_string("codec name", n)).transpose()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid runtime, optional name string alive across the call.
        check(unsafe { sys::gw_codec_create(rt.raw, n.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()), &mut raw) })?;
        Ok(Codec { raw })
    }

    pub fn name(&self) -> String {
        // SAFETY: valid while the codec lives; copied.
        unsafe { cstr(sys::gw_codec_name(self.raw)) }
    }

    pub fn properties(&self) -> Result<CodecProperties> {
        let mut p = sys::gw_codec_properties::default();
        // SAFETY: struct_size set by Default.
        check(unsafe { sys::gw_codec_get_properties(self.raw, &mut p) })?;
        Ok(CodecProperties { flags: p.flags, sum_dtype: p.sum_dtype, dtypes: p.dtypes })
    }

    /// Worst-case payload bytes (32-byte header included) for `count` elements of `dtype`.
    pub fn max_encoded_size(&self, dtype: DType, count: usize) -> Result<usize> {
        let mut b = 0u64;
        // SAFETY: out pointer.
        check(unsafe { sys::gw_codec_max_encoded_size(self.raw, dtype.to_raw(), count as u64, &mut b) })?;
        Ok(b as usize)
    }

    /// Encodes `input` into `payload`; returns the payload's length.
    pub fn encode_into<T: Element>(&mut self, ctx: Option<&CodecContext>, input: &[T], payload: &mut [u8])
        -> Result<usize> {
        let c = ctx.map(|c| c.raw());
        let t = tensor(input);
        let mut size = 0u64;
        // SAFETY: the tensor describes `input`, payload has payload.len() bytes, both borrowed for the call.
        check(unsafe {
            sys::gw_codec_encode(self.raw, ctx_ptr(&c), &t, payload.as_mut_ptr() as *mut c_void, payload.len() as u64,
                                 &mut size)
        })?;
        Ok(size as usize)
    }

    /// Encodes `input` into a new payload (wire header included).
    pub fn encode<T: Element>(&mut self, ctx: Option<&CodecContext>, input: &[T]) -> Result<Vec<u8>> {
        let mut p = vec![0u8; self.max_encoded_size(T::DTYPE, input.len())?];
        let n = self.encode_into(ctx, input, &mut p)?;
        p.truncate(n);
        Ok(p)
    }

    /// Checks `payload`'s header against this codec and `out`, then decodes into `out` (adds to it with
    /// `accumulate`). A malformed payload is `Status::Corrupt`, another codec's `Status::Mismatch`.
    pub fn decode<T: Element>(&mut self, ctx: Option<&CodecContext>, payload: &[u8], out: &mut [T], accumulate: bool)
        -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let mut t = tensor_mut(out);
        let flags = if accumulate { sys::GW_DECODE_ACCUMULATE } else { 0 };
        // SAFETY: payload and out are borrowed for the call; the tensor describes out.
        check(unsafe {
            sys::gw_codec_decode(self.raw, ctx_ptr(&c), payload.as_ptr() as *const c_void, payload.len() as u64,
                                 &mut t, flags)
        })
    }

    /// Error feedback around this codec; it borrows the codec mutably, so no other encoding runs on the
    /// codec meanwhile.
    pub fn error_feedback(&mut self) -> Result<ErrorFeedback<'_>> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the codec outlives the error feedback (borrow).
        check(unsafe { sys::gw_error_feedback_create(self.raw, &mut raw) })?;
        Ok(ErrorFeedback { raw, _codec: std::marker::PhantomData })
    }

    /// Destroys the codec now, reporting an error instead of ignoring it as `Drop` does.
    pub fn close(self) -> Result<()> {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: owned handle.
        check(unsafe { sys::gw_codec_destroy(raw) })
    }
}

impl Drop for Codec {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once, nothing in flight (requests borrow the codec).
        unsafe {
            sys::gw_codec_destroy(self.raw);
        }
    }
}

/// Error feedback (`gw_error_feedback`): each buffer id keeps the residual of its last encoding (f32).
pub struct ErrorFeedback<'c> {
    pub(crate) raw: *mut sys::gw_error_feedback,
    _codec: std::marker::PhantomData<&'c mut Codec>,
}

// SAFETY: every call is "one per error feedback at a time" (&mut self) and the codec is borrowed mutably.
unsafe impl Send for ErrorFeedback<'_> {}

impl ErrorFeedback<'_> {
    /// Encodes input + residual[buffer_id] into `payload`; returns the payload's length.
    pub fn encode_into(&mut self, buffer_id: u64, ctx: Option<&CodecContext>, input: &[f32], payload: &mut [u8])
        -> Result<usize> {
        let c = ctx.map(|c| c.raw());
        let t = tensor(input);
        let mut size = 0u64;
        // SAFETY: borrowed buffers for the call.
        check(unsafe {
            sys::gw_error_feedback_encode(self.raw, buffer_id, ctx_ptr(&c), &t, payload.as_mut_ptr() as *mut c_void,
                                          payload.len() as u64, &mut size)
        })?;
        Ok(size as usize)
    }

    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::gw_error_feedback_reset(self.raw) })
    }

    /// The state (every residual) as a versioned blob.
    pub fn save(&mut self) -> Result<Vec<u8>> {
        let mut n = 0u64;
        // SAFETY: out pointer.
        check(unsafe { sys::gw_error_feedback_state_size(self.raw, &mut n) })?;
        let mut buf = vec![0u8; n as usize];
        let mut written = 0u64;
        // SAFETY: buf has n bytes.
        check(unsafe { sys::gw_error_feedback_save(self.raw, buf.as_mut_ptr() as *mut c_void, n, &mut written) })?;
        buf.truncate(written as usize);
        Ok(buf)
    }

    pub fn load(&mut self, blob: &[u8]) -> Result<()> {
        // SAFETY: blob borrowed for the call.
        check(unsafe { sys::gw_error_feedback_load(self.raw, blob.as_ptr() as *const c_void, blob.len() as u64) })
    }
}

impl Drop for ErrorFeedback<'_> {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe {
            sys::gw_error_feedback_destroy(self.raw);
        }
    }
}
