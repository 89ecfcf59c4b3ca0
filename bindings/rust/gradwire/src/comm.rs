//! `Comm` (a communicator and its blocking collectives), `AbortHandle`, and nonblocking operations
//! through `Comm::scope` / `Request`.
use crate::codec::{ctx_ptr, Codec, CodecContext, ErrorFeedback};
use crate::dtype::{tensor, tensor_mut, Element};
use crate::error::{check, check_progress, Error, Result, Status};
use crate::runtime::{c_string, Runtime};
use gradwire_sys as sys;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// Reduction operators (`gw_reduce_op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    /// Divided once at the end; integer averages truncate.
    Avg,
    Min,
    Max,
}

impl ReduceOp {
    fn to_raw(self) -> sys::gw_reduce_op {
        match self {
            ReduceOp::Sum => sys::GW_REDUCE_SUM,
            ReduceOp::Avg => sys::GW_REDUCE_AVG,
            ReduceOp::Min => sys::GW_REDUCE_MIN,
            ReduceOp::Max => sys::GW_REDUCE_MAX,
        }
    }
}

/// How to build a communicator (`gw_comm_options`). `None` everywhere: from the launcher's environment
/// (`gradwire run`, torchrun, Open MPI, Slurm: docs/bootstrap.md).
#[derive(Debug, Clone, Default)]
pub struct CommOptions {
    pub rank: Option<u32>,
    pub world_size: Option<u32>,
    pub local_rank: Option<u32>,
    pub root_address: Option<String>,
    pub root_port: Option<u16>,
    /// Bounds the rendezvous and every wait; `None`: `[runtime] timeout_s`.
    pub timeout_s: Option<f64>,
}

struct Inner {
    raw: *mut sys::gw_comm,
    /// false once destroyed; abort and destroy both hold the lock, so abort never sees a freed handle.
    alive: Mutex<bool>,
}

// SAFETY: the handle is only used under the C rules: gw_comm_abort (thread: any) and destroy under the
// mutex; everything else through `Comm`, which is !Sync.
unsafe impl Send for Inner {}
unsafe impl Sync for Inner {}

/// A communicator (`gw_comm`). The C rule is that a communicator belongs to one thread (all calls but
/// `gw_comm_abort` from it): `Comm` is `Send` (it may move to another thread with nothing in flight) but
/// not `Sync` (no two threads call it at once). `abort_handle()` gives a `Send + Sync` handle for other
/// threads. Dropping it destroys the communicator; requests borrow it, so none outlives it.
pub struct Comm {
    inner: Arc<Inner>,
    _not_sync: PhantomData<Cell<()>>,
}

/// Aborts a communicator from any thread: every pending and future operation on it fails with
/// `Status::Aborted`. After the communicator is dropped, `abort` answers `Status::State`.
#[derive(Clone)]
pub struct AbortHandle {
    inner: Arc<Inner>,
}

impl AbortHandle {
    pub fn abort(&self) -> Result<()> {
        let alive = self.inner.alive.lock().unwrap_or_else(|e| e.into_inner());
        if !*alive {
            return Err(Error::new(Status::State, "the communicator was already destroyed; there is nothing to abort"));
        }
        // SAFETY: alive under the lock, so the handle is valid; abort is "thread: any".
        check(unsafe { sys::gw_comm_abort(self.inner.raw) })
    }
}

impl Comm {
    /// Creates a communicator over all ranks (collective), every option from the environment.
    pub fn from_env(rt: &Runtime) -> Result<Comm> {
        Comm::new(rt, &CommOptions::default())
    }

    pub fn new(rt: &Runtime, options: &CommOptions) -> Result<Comm> {
        let addr = options.root_address.as_ref().map(|a| c_string("root_address", a)).transpose()?;
        let o = sys::gw_comm_options {
            rank: options.rank.map_or(-1, i64::from),
            world_size: options.world_size.map_or(-1, i64::from),
            local_rank: options.local_rank.map_or(-1, i64::from),
            root_address: addr.as_ref().map_or(std::ptr::null(), |a| a.as_ptr()),
            root_port: options.root_port.map_or(-1, i64::from),
            timeout_s: options.timeout_s.unwrap_or(0.0),
            ..Default::default()
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: o and the address string live across the call.
        check(unsafe { sys::gw_comm_create(rt.raw, &o, &mut raw) })?;
        Ok(Comm { inner: Arc::new(Inner { raw, alive: Mutex::new(true) }), _not_sync: PhantomData })
    }

    pub(crate) fn raw(&self) -> *mut sys::gw_comm {
        self.inner.raw
    }

    pub fn rank(&self) -> u32 {
        // SAFETY: valid handle.
        unsafe { sys::gw_comm_rank(self.inner.raw) }
    }

    pub fn size(&self) -> u32 {
        // SAFETY: valid handle.
        unsafe { sys::gw_comm_size(self.inner.raw) }
    }

    /// A handle that may abort this communicator from another thread.
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle { inner: self.inner.clone() }
    }

    /// Makes every pending and future operation fail with `Status::Aborted`.
    pub fn abort(&self) -> Result<()> {
        self.abort_handle().abort()
    }

    /// out = input reduced over all ranks. Every rank ends with the same bits.
    pub fn allreduce<T: Element>(&self, input: &[T], out: &mut [T], op: ReduceOp) -> Result<()> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: both buffers are borrowed for the blocking call.
        check(unsafe { sys::gw_allreduce(self.raw(), &i, &mut o, op.to_raw()) })
    }

    /// buf = buf reduced over all ranks.
    pub fn allreduce_in_place<T: Element>(&self, buf: &mut [T], op: ReduceOp) -> Result<()> {
        let mut o = tensor_mut(buf);
        let i = o;
        // SAFETY: in == out is gradwire's in-place form; buf is borrowed for the call.
        check(unsafe { sys::gw_allreduce(self.raw(), &i, &mut o, op.to_raw()) })
    }

    /// Rank r's `out` is the reduction of block r of `input` (world_size * out.len() elements).
    pub fn reduce_scatter<T: Element>(&self, input: &[T], out: &mut [T], op: ReduceOp) -> Result<()> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: borrowed for the call.
        check(unsafe { sys::gw_reduce_scatter(self.raw(), &i, &mut o, op.to_raw()) })
    }

    /// `out` (world_size * input.len()) receives every rank's input in rank order.
    pub fn allgather<T: Element>(&self, input: &[T], out: &mut [T]) -> Result<()> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: borrowed for the call.
        check(unsafe { sys::gw_allgather(self.raw(), &i, &mut o) })
    }

    /// Rank r contributes counts[r] elements (input.len() == counts[rank]); `out` holds them packed.
    pub fn allgatherv<T: Element>(&self, input: &[T], out: &mut [T], counts: &[u64]) -> Result<()> {
        if counts.len() != self.size() as usize {
            return Err(crate::error::invalid(format!(
                "counts has {} entries but the communicator has {} ranks; give one count per rank",
                counts.len(),
                self.size()
            )));
        }
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: borrowed for the call; counts has world_size entries.
        check(unsafe { sys::gw_allgatherv(self.raw(), &i, &mut o, counts.as_ptr()) })
    }

    /// Root's `buf` is copied into every rank's `buf`.
    pub fn broadcast<T: Element>(&self, buf: &mut [T], root: u32) -> Result<()> {
        let mut b = tensor_mut(buf);
        // SAFETY: borrowed for the call.
        check(unsafe { sys::gw_broadcast(self.raw(), &mut b, root) })
    }

    pub fn barrier(&self) -> Result<()> {
        // SAFETY: valid handle.
        check(unsafe { sys::gw_barrier(self.raw()) })
    }

    pub fn send<T: Element>(&self, buf: &[T], peer: u32, tag: u32) -> Result<()> {
        let b = tensor(buf);
        // SAFETY: borrowed for the call.
        check(unsafe { sys::gw_send(self.raw(), &b, peer, tag) })
    }

    /// Receives a message of exactly buf's size in bytes (another size is `Status::Mismatch`).
    pub fn recv<T: Element>(&self, buf: &mut [T], peer: u32, tag: u32) -> Result<()> {
        let mut b = tensor_mut(buf);
        // SAFETY: borrowed for the call.
        check(unsafe { sys::gw_recv(self.raw(), &mut b, peer, tag) })
    }

    /// out = input summed (or averaged) over all ranks through `codec`'s payloads. Every rank passes a
    /// codec of the same name and configuration and the same context (seed, step).
    pub fn allreduce_compressed(&self, codec: &mut Codec, ctx: Option<&CodecContext>, input: &[f32], out: &mut [f32],
                                op: ReduceOp) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: codec and buffers borrowed for the call.
        check(unsafe { sys::gw_allreduce_compressed(self.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, op.to_raw()) })
    }

    pub fn allreduce_compressed_in_place(&self, codec: &mut Codec, ctx: Option<&CodecContext>, buf: &mut [f32],
                                         op: ReduceOp) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let mut o = tensor_mut(buf);
        let i = o;
        // SAFETY: in == out is the in-place form.
        check(unsafe { sys::gw_allreduce_compressed(self.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, op.to_raw()) })
    }

    /// The compressed allreduce with error feedback inside the collective (`gw_allreduce_compressed_ef`):
    /// every encoding this rank makes, the owner's re-encoding of a block included, adds `ef`'s residual
    /// and keeps what it dropped. One `ef` per tensor, the same length every call; not also used with
    /// `ErrorFeedback::encode_into`.
    pub fn allreduce_compressed_ef(&self, ef: &mut ErrorFeedback<'_>, ctx: Option<&CodecContext>, input: &[f32],
                                   out: &mut [f32], op: ReduceOp) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: error feedback and buffers borrowed for the call.
        check(unsafe { sys::gw_allreduce_compressed_ef(self.raw(), ef.raw, ctx_ptr(&c), &i, &mut o, op.to_raw()) })
    }

    /// `out` = this rank's shard of `input` (world_size shards of out.len()) summed (or averaged) over all
    /// ranks through `codec`'s payloads: each shard encoded once by every other rank, summed in f32 in rank
    /// order by its owner (`gw_reduce_scatter_compressed`). Every rank passes the same codec and context.
    pub fn reduce_scatter_compressed(&self, codec: &mut Codec, ctx: Option<&CodecContext>, input: &[f32],
                                     out: &mut [f32], op: ReduceOp) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: codec and buffers borrowed for the call.
        check(unsafe {
            sys::gw_reduce_scatter_compressed(self.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, op.to_raw())
        })
    }

    /// The compressed reduce-scatter with error feedback inside the collective
    /// (`gw_reduce_scatter_compressed_ef`): each encoding of another rank's shard adds `ef`'s residual and
    /// keeps what it dropped. One `ef` per tensor, the same length every call.
    pub fn reduce_scatter_compressed_ef(&self, ef: &mut ErrorFeedback<'_>, ctx: Option<&CodecContext>,
                                        input: &[f32], out: &mut [f32], op: ReduceOp) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: error feedback and buffers borrowed for the call.
        check(unsafe {
            sys::gw_reduce_scatter_compressed_ef(self.raw(), ef.raw, ctx_ptr(&c), &i, &mut o, op.to_raw())
        })
    }

    /// `out` (world_size * input.len()) receives every rank's input in rank order as `codec` decodes it:
    /// each rank's input encoded once and decoded by every rank, its own too, so every rank holds the same
    /// bits (`gw_allgather_compressed`).
    pub fn allgather_compressed(&self, codec: &mut Codec, ctx: Option<&CodecContext>, input: &[f32],
                                out: &mut [f32]) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: codec and buffers borrowed for the call.
        check(unsafe { sys::gw_allgather_compressed(self.raw(), codec.raw, ctx_ptr(&c), &i, &mut o) })
    }

    /// The compressed allgather with error feedback on this rank's encoding (`gw_allgather_compressed_ef`).
    pub fn allgather_compressed_ef(&self, ef: &mut ErrorFeedback<'_>, ctx: Option<&CodecContext>, input: &[f32],
                                   out: &mut [f32]) -> Result<()> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        // SAFETY: error feedback and buffers borrowed for the call.
        check(unsafe { sys::gw_allgather_compressed_ef(self.raw(), ef.raw, ctx_ptr(&c), &i, &mut o) })
    }

    /// Runs `f` with a `Scope` that starts nonblocking operations. Each returns a `Request` that borrows
    /// its buffers (and codec) for the scope, so the compiler forbids touching or freeing them while the
    /// operation may run. Dropping an unfinished `Request` waits for it (the communicator's timeout bounds
    /// a stuck collective), then frees it; `Request::wait` reports its error instead. When `f` returns (or
    /// panics), every request it did not finish — even one passed to `mem::forget` — is waited for and
    /// freed before `scope` returns, so no buffer is ever released while gradwire still uses it.
    ///
    /// ```no_run
    /// # fn f(comm: &gradwire::Comm) -> gradwire::Result<()> {
    /// let mut grads = vec![1.0f32; 1024];
    /// let mut stats = vec![0i64; 4];
    /// comm.scope(|s| {
    ///     let a = s.allreduce_in_place(&mut grads, gradwire::ReduceOp::Avg)?;
    ///     let b = s.allreduce_in_place(&mut stats, gradwire::ReduceOp::Sum)?; // both in flight
    ///     a.wait()?;
    ///     b.wait()
    /// })?;
    /// grads[0] += 1.0; // the buffers are the caller's again once the scope is over
    /// # Ok(()) }
    /// ```
    ///
    /// Touching a buffer while its operation may run does not compile:
    ///
    /// ```compile_fail
    /// # fn f(comm: &gradwire::Comm) {
    /// let mut buf = vec![1.0f32; 4];
    /// comm.scope(|s| {
    ///     let r = s.allreduce_in_place(&mut buf, gradwire::ReduceOp::Sum).unwrap();
    ///     buf[0] = 2.0; // error: `buf` is borrowed by the request
    ///     r.wait().unwrap();
    /// });
    /// # }
    /// ```
    ///
    /// nor does handing it a buffer that dies before the scope ends:
    ///
    /// ```compile_fail
    /// # fn f(comm: &gradwire::Comm) {
    /// comm.scope(|s| {
    ///     let mut local = vec![1.0f32; 4];
    ///     let _r = s.allreduce_in_place(&mut local, gradwire::ReduceOp::Sum).unwrap(); // error: does not live long enough
    /// });
    /// # }
    /// ```
    ///
    /// and two threads cannot share a `Comm` (it is `Send`, not `Sync`):
    ///
    /// ```compile_fail
    /// # fn f(comm: gradwire::Comm) {
    /// std::thread::scope(|t| {
    ///     t.spawn(|| comm.barrier());
    ///     comm.barrier()
    /// });
    /// # }
    /// ```
    pub fn scope<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        let scope = Scope { comm: self, pending: RefCell::new(Vec::new()), _scope: PhantomData };
        struct Finish<'a>(&'a RefCell<Vec<*mut sys::gw_request>>);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                for r in self.0.borrow_mut().iter_mut() {
                    if !r.is_null() {
                        finish(*r);
                        *r = std::ptr::null_mut();
                    }
                }
            }
        }
        let _finish = Finish(&scope.pending);
        f(&scope)
    }

    /// Destroys the communicator now, reporting an error (`Drop` ignores it).
    pub fn close(self) -> Result<()> {
        let r = {
            let mut alive = self.inner.alive.lock().unwrap_or_else(|e| e.into_inner());
            *alive = false;
            // SAFETY: owned handle; requests borrow the Comm, so none is alive.
            check(unsafe { sys::gw_comm_destroy(self.inner.raw) })
        };
        drop(self); // Drop sees alive == false; abort handles answer Status::State from now on
        r
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        let mut alive = self.inner.alive.lock().unwrap_or_else(|e| e.into_inner());
        if *alive {
            *alive = false;
            // SAFETY: owned handle, destroyed once.
            unsafe {
                sys::gw_comm_destroy(self.inner.raw);
            }
        }
    }
}

/// Waits for a request (no limit of its own) and frees it, ignoring its status.
fn finish(r: *mut sys::gw_request) {
    // SAFETY: r is a live request of this thread's communicator.
    unsafe {
        sys::gw_request_wait(r, -1.0);
        sys::gw_request_free(r);
    }
}

/// Starts nonblocking operations on a communicator; see `Comm::scope`. Not `Send`: requests are tested
/// and waited for on the communicator's thread.
pub struct Scope<'scope, 'env: 'scope> {
    comm: &'env Comm,
    pending: RefCell<Vec<*mut sys::gw_request>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
}

/// A nonblocking operation in flight. Borrows its buffers for `'a`.
pub struct Request<'a> {
    raw: *mut sys::gw_request,
    slot: usize,
    pending: &'a RefCell<Vec<*mut sys::gw_request>>,
    done: bool,
}

impl<'a> Request<'a> {
    /// Ok(true) once complete, Ok(false) while running, or the operation's error. Drives progress.
    pub fn test(&mut self) -> Result<bool> {
        // SAFETY: live request.
        let r = check_progress(unsafe { sys::gw_request_test(self.raw) });
        if !matches!(r, Ok(false)) {
            self.done = true;
        }
        r
    }

    /// Waits until the request completes (the communicator's timeout still ends a stuck collective).
    pub fn wait(mut self) -> Result<()> {
        // SAFETY: live request.
        let r = check(unsafe { sys::gw_request_wait(self.raw, -1.0) });
        self.done = true;
        r
    }

    /// Waits at most `seconds`: Ok(true) when complete, Ok(false) when the time passed first (the
    /// request is still running), or the operation's error.
    pub fn wait_timeout(&mut self, seconds: f64) -> Result<bool> {
        let seconds = if seconds.is_finite() && seconds >= 0.0 { seconds } else { 0.0 };
        // SAFETY: live request.
        let s = unsafe { sys::gw_request_wait(self.raw, seconds) };
        if s == sys::GW_ERR_TIMEOUT {
            // Timed out by our limit or ended by the communicator's? The request says: test it.
            // SAFETY: live request.
            let t = unsafe { sys::gw_request_test(self.raw) };
            if t == sys::GW_IN_PROGRESS {
                return Ok(false);
            }
            self.done = true;
            return check(t).map(|_| true);
        }
        self.done = true;
        check(s).map(|_| true)
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.done {
            // SAFETY: complete; free it.
            unsafe {
                sys::gw_request_free(self.raw);
            }
        } else {
            finish(self.raw);
        }
        if let Ok(mut p) = self.pending.try_borrow_mut() {
            p[self.slot] = std::ptr::null_mut();
        }
    }
}

impl<'scope, 'env> Scope<'scope, 'env> {
    fn track(&'scope self, status: sys::gw_status, raw: *mut sys::gw_request) -> Result<Request<'scope>> {
        check(status)?;
        let mut p = self.pending.borrow_mut();
        p.push(raw);
        Ok(Request { raw, slot: p.len() - 1, pending: &self.pending, done: false })
    }

    pub fn comm(&self) -> &'env Comm {
        self.comm
    }

    pub fn allreduce<T: Element>(&'scope self, input: &'scope [T], out: &'scope mut [T], op: ReduceOp)
        -> Result<Request<'scope>> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: buffers borrowed for 'scope, which ends only after the request is waited for.
        let s = unsafe { sys::gw_allreduce_start(self.comm.raw(), &i, &mut o, op.to_raw(), &mut r) };
        self.track(s, r)
    }

    pub fn allreduce_in_place<T: Element>(&'scope self, buf: &'scope mut [T], op: ReduceOp)
        -> Result<Request<'scope>> {
        let mut o = tensor_mut(buf);
        let i = o;
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_allreduce_start(self.comm.raw(), &i, &mut o, op.to_raw(), &mut r) };
        self.track(s, r)
    }

    pub fn reduce_scatter<T: Element>(&'scope self, input: &'scope [T], out: &'scope mut [T], op: ReduceOp)
        -> Result<Request<'scope>> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_reduce_scatter_start(self.comm.raw(), &i, &mut o, op.to_raw(), &mut r) };
        self.track(s, r)
    }

    pub fn allgather<T: Element>(&'scope self, input: &'scope [T], out: &'scope mut [T]) -> Result<Request<'scope>> {
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_allgather_start(self.comm.raw(), &i, &mut o, &mut r) };
        self.track(s, r)
    }

    /// `counts` is copied by gradwire.
    pub fn allgatherv<T: Element>(&'scope self, input: &'scope [T], out: &'scope mut [T], counts: &[u64])
        -> Result<Request<'scope>> {
        if counts.len() != self.comm.size() as usize {
            return Err(crate::error::invalid(format!(
                "counts has {} entries but the communicator has {} ranks; give one count per rank",
                counts.len(),
                self.comm.size()
            )));
        }
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above; counts is copied during the call.
        let s = unsafe { sys::gw_allgatherv_start(self.comm.raw(), &i, &mut o, counts.as_ptr(), &mut r) };
        self.track(s, r)
    }

    pub fn broadcast<T: Element>(&'scope self, buf: &'scope mut [T], root: u32) -> Result<Request<'scope>> {
        let mut b = tensor_mut(buf);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_broadcast_start(self.comm.raw(), &mut b, root, &mut r) };
        self.track(s, r)
    }

    pub fn barrier(&'scope self) -> Result<Request<'scope>> {
        let mut r = std::ptr::null_mut();
        // SAFETY: valid handle.
        let s = unsafe { sys::gw_barrier_start(self.comm.raw(), &mut r) };
        self.track(s, r)
    }

    pub fn send<T: Element>(&'scope self, buf: &'scope [T], peer: u32, tag: u32) -> Result<Request<'scope>> {
        let b = tensor(buf);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_send_start(self.comm.raw(), &b, peer, tag, &mut r) };
        self.track(s, r)
    }

    pub fn recv<T: Element>(&'scope self, buf: &'scope mut [T], peer: u32, tag: u32) -> Result<Request<'scope>> {
        let mut b = tensor_mut(buf);
        let mut r = std::ptr::null_mut();
        // SAFETY: as above.
        let s = unsafe { sys::gw_recv_start(self.comm.raw(), &mut b, peer, tag, &mut r) };
        self.track(s, r)
    }

    /// The codec belongs to the request too, so it is borrowed mutably for the scope.
    pub fn allreduce_compressed(&'scope self, codec: &'scope mut Codec, ctx: Option<&CodecContext>,
                                input: &'scope [f32], out: &'scope mut [f32], op: ReduceOp)
        -> Result<Request<'scope>> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: codec and buffers borrowed for 'scope; the context is read during the call.
        let s = unsafe {
            sys::gw_allreduce_compressed_start(self.comm.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, op.to_raw(), &mut r)
        };
        self.track(s, r)
    }

    /// `Comm::allreduce_compressed_ef`, nonblocking: the error feedback belongs to the request too.
    pub fn allreduce_compressed_ef(&'scope self, ef: &'scope mut ErrorFeedback<'_>, ctx: Option<&CodecContext>,
                                   input: &'scope [f32], out: &'scope mut [f32], op: ReduceOp)
        -> Result<Request<'scope>> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: error feedback and buffers borrowed for 'scope; the context is read during the call.
        let s = unsafe {
            sys::gw_allreduce_compressed_ef_start(self.comm.raw(), ef.raw, ctx_ptr(&c), &i, &mut o, op.to_raw(), &mut r)
        };
        self.track(s, r)
    }

    /// `Comm::reduce_scatter_compressed`, nonblocking: the codec belongs to the request too.
    pub fn reduce_scatter_compressed(&'scope self, codec: &'scope mut Codec, ctx: Option<&CodecContext>,
                                     input: &'scope [f32], out: &'scope mut [f32], op: ReduceOp)
        -> Result<Request<'scope>> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: codec and buffers borrowed for 'scope; the context is read during the call.
        let s = unsafe {
            sys::gw_reduce_scatter_compressed_start(self.comm.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, op.to_raw(),
                                                    &mut r)
        };
        self.track(s, r)
    }

    /// `Comm::allgather_compressed`, nonblocking: the codec belongs to the request too.
    pub fn allgather_compressed(&'scope self, codec: &'scope mut Codec, ctx: Option<&CodecContext>,
                                input: &'scope [f32], out: &'scope mut [f32]) -> Result<Request<'scope>> {
        let c = ctx.map(|c| c.raw());
        let i = tensor(input);
        let mut o = tensor_mut(out);
        let mut r = std::ptr::null_mut();
        // SAFETY: codec and buffers borrowed for 'scope; the context is read during the call.
        let s = unsafe { sys::gw_allgather_compressed_start(self.comm.raw(), codec.raw, ctx_ptr(&c), &i, &mut o, &mut r) };
        self.track(s, r)
    }
}
