//! `Sync`: the synchronizer a trainer calls each step (`gw_sync`, docs/sync.md).
use crate::comm::Comm;
use crate::error::{check, cstr, Result};
use crate::runtime::{c_string, Runtime};
use gradwire_sys as sys;
use std::marker::PhantomData;
use std::os::raw::c_void;

/// Names a registered tensor: what `Sync::register` returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TensorId(usize);

/// The `GW_SYNC_*` bits `Sync::step` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepFlags(pub u32);

impl StepFlags {
    /// The optimizer should apply this step's gradients.
    pub fn apply(self) -> bool {
        self.0 & sys::GW_SYNC_APPLY != 0
    }
    pub fn gradients_averaged(self) -> bool {
        self.0 & sys::GW_SYNC_GRADIENTS_AVERAGED != 0
    }
    pub fn parameters_averaged(self) -> bool {
        self.0 & sys::GW_SYNC_PARAMETERS_AVERAGED != 0
    }
    /// An outer step of the schedule `diloco` set some parameters (docs/diloco.md).
    pub fn outer_step(self) -> bool {
        self.0 & sys::GW_SYNC_OUTER_STEP != 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    pub codec: String,
    pub count: u64,
    pub num_tensors: u32,
}

/// Accounting of one bucket or of all (`gw_sync_stats`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncStats {
    pub raw_bytes: u64,
    pub wire_bytes: u64,
    pub compression_ratio: f64,
    pub encode_seconds: f64,
    pub transfer_seconds: f64,
    pub decode_seconds: f64,
    pub steps: u64,
    pub syncs: u64,
}

struct Tensor {
    // Boxed slices never move, so the pointers gradwire keeps stay valid while the Sync lives.
    gradient: Box<[f32]>,
    parameter: Option<Box<[f32]>>,
}

/// A synchronizer over a communicator. It owns the gradient (and parameter) buffers gradwire reads and
/// writes: the C API keeps their addresses while the synchronizer lives, so the binding allocates them
/// and lends them out between calls (`gradient_mut`, `parameter_mut`); a `gw_sync` call takes `&mut self`
/// and so can never run while one is borrowed. It borrows the communicator mutably (the C rule: while a
/// synchronizer exists the communicator is used only through it) and the runtime (which must outlive
/// it). `Send`, not `Sync`, like its communicator.
pub struct Sync<'a> {
    raw: *mut sys::gw_sync,
    tensors: Vec<Tensor>,
    _comm: PhantomData<&'a mut Comm>,
    _runtime: PhantomData<&'a Runtime>,
}

// SAFETY: every gw_sync call is "thread: comm", serialized by &mut self; the synchronizer's
// own progress thread shares a lock with those calls inside gradwire.
unsafe impl Send for Sync<'_> {}

impl<'a> Sync<'a> {
    pub fn new(comm: &'a mut Comm, runtime: &'a Runtime) -> Result<Sync<'a>> {
        let o = sys::gw_sync_options { runtime: runtime.raw, ..Default::default() };
        let mut raw = std::ptr::null_mut();
        // SAFETY: both handles are borrowed for 'a.
        check(unsafe { sys::gw_sync_create(comm.raw(), &o, &mut raw) })?;
        Ok(Sync { raw, tensors: Vec::new(), _comm: PhantomData, _runtime: PhantomData })
    }

    /// Registers a tensor of `count` f32 elements (zero-filled), with a parameter buffer of the same count
    /// when `with_parameter` (schedules that average parameters need it). Before `finalize`.
    pub fn register(&mut self, name: &str, count: usize, with_parameter: bool) -> Result<TensorId> {
        let n = c_string("tensor name", name)?;
        let mut t = Tensor {
            gradient: vec![0f32; count].into_boxed_slice(),
            parameter: if with_parameter { Some(vec![0f32; count].into_boxed_slice()) } else { None },
        };
        let g = crate::dtype::tensor_mut(&mut t.gradient);
        let p = t.parameter.as_mut().map(|p| crate::dtype::tensor_mut(p));
        // SAFETY: the buffers are moved into self.tensors below without moving their heap memory, and live
        // as long as the synchronizer.
        check(unsafe {
            sys::gw_sync_register(self.raw, n.as_ptr(), &g, p.as_ref().map_or(std::ptr::null(), |p| p as *const _))
        })?;
        self.tensors.push(t);
        Ok(TensorId(self.tensors.len() - 1))
    }

    /// Gives a registered tensor its shape (the product of `dims` is its count), before `finalize`: codecs
    /// that work on matrices (powersgd) see it as `dims[0]` x the rest. Since ABI 1.4.
    pub fn register_shape(&mut self, name: &str, dims: &[i64]) -> Result<()> {
        let n = c_string("tensor name", name)?;
        // SAFETY: valid handle; `dims` is read during the call.
        check(unsafe { sys::gw_sync_register_shape(self.raw, n.as_ptr(), dims.len() as u32, dims.as_ptr()) })
    }

    /// Fuses the tensors into buckets and checks that every rank registered the same ones. Collective.
    pub fn finalize(&mut self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::gw_sync_finalize(self.raw) })
    }

    pub fn gradient(&self, id: TensorId) -> &[f32] {
        &self.tensors[id.0].gradient
    }
    pub fn gradient_mut(&mut self, id: TensorId) -> &mut [f32] {
        &mut self.tensors[id.0].gradient
    }
    pub fn parameter(&self, id: TensorId) -> Option<&[f32]> {
        self.tensors[id.0].parameter.as_deref()
    }
    pub fn parameter_mut(&mut self, id: TensorId) -> Option<&mut [f32]> {
        self.tensors[id.0].parameter.as_deref_mut()
    }
    /// The gradient and the parameter together (an optimizer step reads one and writes the other).
    pub fn tensor_mut(&mut self, id: TensorId) -> (&mut [f32], Option<&mut [f32]>) {
        let t = &mut self.tensors[id.0];
        (&mut t.gradient, t.parameter.as_deref_mut())
    }

    pub fn bucket_count(&mut self) -> Result<u32> {
        let mut n = 0;
        // SAFETY: out pointer.
        check(unsafe { sys::gw_sync_bucket_count(self.raw, &mut n) })?;
        Ok(n)
    }

    pub fn bucket_info(&mut self, bucket: u32) -> Result<BucketInfo> {
        let mut i = sys::gw_sync_bucket_info::default();
        // SAFETY: struct_size set; the codec string is copied at once.
        check(unsafe { sys::gw_sync_get_bucket_info(self.raw, bucket, &mut i) })?;
        Ok(BucketInfo { codec: unsafe { cstr(i.codec) }, count: i.count, num_tensors: i.num_tensors })
    }

    pub fn tensor_bucket(&mut self, name: &str) -> Result<u32> {
        let n = c_string("tensor name", name)?;
        let mut b = 0;
        // SAFETY: string alive across the call.
        check(unsafe { sys::gw_sync_tensor_bucket(self.raw, n.as_ptr(), &mut b) })?;
        Ok(b)
    }

    /// The gradients of `bucket` are final: its exchange may start now (the buffers are copied).
    pub fn bucket_ready(&mut self, bucket: u32) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::gw_sync_bucket_ready(self.raw, bucket) })
    }

    /// Ends a step (collective); apply the optimizer only when the flags say `apply()`.
    pub fn step(&mut self) -> Result<StepFlags> {
        let mut f = 0u32;
        // SAFETY: out pointer.
        check(unsafe { sys::gw_sync_step(self.raw, &mut f) })?;
        Ok(StepFlags(f))
    }

    /// Instead of `step`: this step is skipped on every rank and counts nothing.
    pub fn skip_step(&mut self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::gw_sync_skip_step(self.raw) })
    }

    /// The checkpoint blob (schedule counters, residuals, accumulators, background results).
    pub fn save_state(&mut self) -> Result<Vec<u8>> {
        let mut n = 0u64;
        // SAFETY: buf NULL asks for the size.
        check(unsafe { sys::gw_sync_save_state(self.raw, std::ptr::null_mut(), 0, &mut n) })?;
        let mut buf = vec![0u8; n as usize];
        // SAFETY: buf has n bytes.
        check(unsafe { sys::gw_sync_save_state(self.raw, buf.as_mut_ptr() as *mut c_void, n, &mut n) })?;
        buf.truncate(n as usize);
        Ok(buf)
    }

    pub fn load_state(&mut self, blob: &[u8]) -> Result<()> {
        // SAFETY: blob borrowed for the call.
        check(unsafe { sys::gw_sync_load_state(self.raw, blob.as_ptr() as *const c_void, blob.len() as u64) })
    }

    /// Accounting of one bucket, or of all with `None`.
    pub fn stats(&mut self, bucket: Option<u32>) -> Result<SyncStats> {
        let mut s = sys::gw_sync_stats::default();
        // SAFETY: struct_size set.
        check(unsafe { sys::gw_sync_get_stats(self.raw, bucket.unwrap_or(sys::GW_SYNC_ALL_BUCKETS), &mut s) })?;
        Ok(SyncStats {
            raw_bytes: s.raw_bytes,
            wire_bytes: s.wire_bytes,
            compression_ratio: s.compression_ratio,
            encode_seconds: s.encode_seconds,
            transfer_seconds: s.transfer_seconds,
            decode_seconds: s.decode_seconds,
            steps: s.steps,
            syncs: s.syncs,
        })
    }
}

impl Drop for Sync<'_> {
    fn drop(&mut self) {
        // SAFETY: owned handle; waits for exchanges in flight before the buffers are freed (fields drop
        // after this).
        unsafe {
            sys::gw_sync_destroy(self.raw);
        }
    }
}
