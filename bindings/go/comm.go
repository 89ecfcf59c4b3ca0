package gradwire

/*
#include "shim.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// CommOptions configure NewComm. Zero values: from the launcher's environment (gradwire run, torchrun,
// Open MPI, Slurm).
type CommOptions struct {
	// Rank and WorldSize are used when WorldSize > 0.
	Rank, WorldSize int
	// TimeoutS bounds the rendezvous and every wait; 0: [runtime] timeout_s.
	TimeoutS float64
}

// Comm is a communicator. gradwire's rule is that one thread uses a communicator: use a Comm from one
// goroutine at a time (the binding does not lock around collectives). Abort is the exception: any
// goroutine may call it, also while another waits on the communicator.
type Comm struct {
	mu  sync.Mutex // guards raw against Abort racing Close
	raw *C.gw_comm
}

// NewComm creates a communicator over all ranks (collective).
func NewComm(rt *Runtime, o CommOptions) (*Comm, error) {
	rank, size := int64(-1), int64(-1)
	if o.WorldSize > 0 {
		rank, size = int64(o.Rank), int64(o.WorldSize)
	}
	var raw *C.gw_comm
	var msg *C.char
	if err := call(C.go_comm_create(rt.raw, C.int64_t(rank), C.int64_t(size), C.double(o.TimeoutS), &raw, &msg),
		msg); err != nil {
		return nil, err
	}
	return &Comm{raw: raw}, nil
}

// Close destroys the communicator; ErrState while a Request of it is not freed.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var msg *C.char
	err := call(C.go_comm_destroy(c.raw, &msg), msg)
	if err == nil {
		c.raw = nil
	}
	return err
}

// Abort makes every pending and future operation fail with ErrAborted. Any goroutine.
func (c *Comm) Abort() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var msg *C.char
	return call(C.go_comm_abort(c.raw, &msg), msg)
}

func (c *Comm) Rank() int { return int(C.gw_comm_rank(c.raw)) }
func (c *Comm) Size() int { return int(C.gw_comm_size(c.raw)) }

// Allreduce: out = in reduced over all ranks. Pass the same slice twice for in place.
func Allreduce[T Element](c *Comm, in, out []T, op ReduceOp) error {
	var msg *C.char
	return call(C.go_allreduce(c.raw, C.int(dtypeOf[T]()), ptr(in), C.uint64_t(len(in)), ptr(out),
		C.uint64_t(len(out)), C.int(op), nil, &msg), msg)
}

// Allgather: out (Size() * len(in)) receives every rank's in, in rank order.
func Allgather[T Element](c *Comm, in, out []T) error {
	var msg *C.char
	return call(C.go_allgather(c.raw, C.int(dtypeOf[T]()), ptr(in), C.uint64_t(len(in)), ptr(out),
		C.uint64_t(len(out)), nil, &msg), msg)
}

// Broadcast copies root's buf into every rank's buf.
func Broadcast[T Element](c *Comm, buf []T, root int) error {
	var msg *C.char
	return call(C.go_broadcast(c.raw, C.int(dtypeOf[T]()), ptr(buf), C.uint64_t(len(buf)), C.uint32_t(root), nil,
		&msg), msg)
}

// ReduceScatter: in holds Size() * len(out) elements; rank r's out is the reduction of block r.
func ReduceScatter[T Element](c *Comm, in, out []T, op ReduceOp) error {
	var msg *C.char
	return call(C.go_reduce_scatter(c.raw, C.int(dtypeOf[T]()), ptr(in), C.uint64_t(len(in)), ptr(out),
		C.uint64_t(len(out)), C.int(op), &msg), msg)
}

// Allgatherv: rank r contributes counts[r] elements (len(in) == counts[Rank()]); out holds them packed.
func Allgatherv[T Element](c *Comm, in, out []T, counts []uint64) error {
	if len(counts) != c.Size() {
		return invalid("counts has %d entries but the communicator has %d ranks; give one count per rank", len(counts), c.Size())
	}
	var msg *C.char
	// counts is Go memory without Go pointers, read during the call only: allowed by cgo.
	return call(C.go_allgatherv(c.raw, C.int(dtypeOf[T]()), ptr(in), C.uint64_t(len(in)), ptr(out),
		C.uint64_t(len(out)), (*C.uint64_t)(unsafe.Pointer(&counts[0])), &msg), msg)
}

func (c *Comm) Barrier() error {
	var msg *C.char
	return call(C.go_barrier(c.raw, nil, &msg), msg)
}

func Send[T Element](c *Comm, buf []T, peer, tag int) error {
	var msg *C.char
	return call(C.go_send(c.raw, C.int(dtypeOf[T]()), ptr(buf), C.uint64_t(len(buf)), C.uint32_t(peer),
		C.uint32_t(tag), &msg), msg)
}

func Recv[T Element](c *Comm, buf []T, peer, tag int) error {
	var msg *C.char
	return call(C.go_recv(c.raw, C.int(dtypeOf[T]()), ptr(buf), C.uint64_t(len(buf)), C.uint32_t(peer),
		C.uint32_t(tag), &msg), msg)
}

// AllreduceCompressed: out = in summed (or averaged) over all ranks through codec's payloads.
func (c *Comm) AllreduceCompressed(codec *Codec, ctx CodecContext, in, out []float32, op ReduceOp) error {
	var msg *C.char
	return call(C.go_allreduce_compressed(c.raw, codec.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), ptr(in),
		C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), C.int(op), nil, &msg), msg)
}

// AllreduceCompressedEF is AllreduceCompressed with error feedback inside the collective: every
// encoding this rank makes, the owner's re-encoding of a block included, adds ef's residual and keeps
// what it dropped. One ErrorFeedback per tensor, the same length every call.
func (c *Comm) AllreduceCompressedEF(ef *ErrorFeedback, ctx CodecContext, in, out []float32, op ReduceOp) error {
	var msg *C.char
	return call(C.go_allreduce_compressed_ef(c.raw, ef.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), ptr(in),
		C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), C.int(op), nil, &msg), msg)
}

// ReduceScatterCompressed: out = this rank's shard of in (Size() shards of len(out)) summed (or averaged)
// over all ranks through codec's payloads; each shard is encoded once by every other rank and summed in
// f32 in rank order by its owner.
func (c *Comm) ReduceScatterCompressed(codec *Codec, ctx CodecContext, in, out []float32, op ReduceOp) error {
	var msg *C.char
	return call(C.go_reduce_scatter_compressed(c.raw, codec.raw, nil, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step),
		ptr(in), C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), C.int(op), nil, &msg), msg)
}

// ReduceScatterCompressedEF is ReduceScatterCompressed with error feedback on every encoding of
// another rank's shard. One ErrorFeedback per tensor, the same length every call.
func (c *Comm) ReduceScatterCompressedEF(ef *ErrorFeedback, ctx CodecContext, in, out []float32, op ReduceOp) error {
	var msg *C.char
	return call(C.go_reduce_scatter_compressed(c.raw, nil, ef.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step),
		ptr(in), C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), C.int(op), nil, &msg), msg)
}

// AllgatherCompressed: out (Size() * len(in)) receives every rank's in, in rank order, as codec decodes
// it; every rank decodes the same payloads (its own too), so every rank holds the same bits.
func (c *Comm) AllgatherCompressed(codec *Codec, ctx CodecContext, in, out []float32) error {
	var msg *C.char
	return call(C.go_allgather_compressed(c.raw, codec.raw, nil, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step),
		ptr(in), C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), nil, &msg), msg)
}

// AllgatherCompressedEF is AllgatherCompressed with error feedback on this rank's encoding.
func (c *Comm) AllgatherCompressedEF(ef *ErrorFeedback, ctx CodecContext, in, out []float32) error {
	var msg *C.char
	return call(C.go_allgather_compressed(c.raw, nil, ef.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step),
		ptr(in), C.uint64_t(len(in)), ptr(out), C.uint64_t(len(out)), nil, &msg), msg)
}

// Buffer is memory allocated in C by the binding, for nonblocking operations: gradwire keeps its
// address until the request completes, which the cgo rules forbid for Go memory. Slice() views it.
// Free refuses (ErrState) while a request uses it.
type Buffer[T Element] struct {
	p        unsafe.Pointer
	n        int
	inFlight int
}

// NewBuffer allocates n zeroed elements in C memory.
func NewBuffer[T Element](n int) *Buffer[T] {
	var z T
	size := C.size_t(n) * C.size_t(unsafe.Sizeof(z))
	if size == 0 {
		size = 1
	}
	return &Buffer[T]{p: C.calloc(1, size), n: n}
}

// Slice is a Go view of the C memory: valid until Free; do not touch it while a request uses it.
func (b *Buffer[T]) Slice() []T {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice((*T)(b.p), b.n)
}

func (b *Buffer[T]) Len() int { return b.n }

// Free releases the memory; ErrState while a request uses the buffer.
func (b *Buffer[T]) Free() error {
	if b.inFlight > 0 {
		return &Error{Status: ErrState, Message: "the buffer is used by a request in flight; Wait for it (or Free the request) first"}
	}
	C.free(b.p)
	b.p = nil
	b.n = 0
	return nil
}

// Request is a nonblocking operation in flight. Wait (or Test until done), then Free; Free before it
// completed fails the communicator on every rank (gradwire's rule), so Free waits first.
type Request struct {
	raw     *C.gw_request
	release func()
}

func track(s C.gw_status, msg *C.char, r *C.gw_request, release func()) (*Request, error) {
	if err := call(s, msg); err != nil {
		release()
		return nil, err
	}
	return &Request{raw: r, release: release}, nil
}

// Test reports whether the request completed (or its error). Drives progress.
func (r *Request) Test() (bool, error) {
	var msg *C.char
	s := C.go_request_test(r.raw, &msg)
	return s == C.GW_OK, call(s, msg)
}

// Wait blocks until the request completes; the communicator's timeout ends a stuck collective.
func (r *Request) Wait() error {
	var msg *C.char
	return call(C.go_request_wait(r.raw, -1, &msg), msg)
}

// Free waits for the request if it is still running, frees it and releases its buffers.
func (r *Request) Free() error {
	if r.raw == nil {
		return &Error{Status: ErrState, Message: "the request was already freed"}
	}
	var msg *C.char
	C.go_request_wait(r.raw, -1, &msg)
	if msg != nil {
		C.free(unsafe.Pointer(msg))
		msg = nil
	}
	err := call(C.go_request_free(r.raw, &msg), msg)
	r.raw = nil
	r.release()
	return err
}

func use[T Element](bufs ...*Buffer[T]) (func(), error) {
	for _, b := range bufs {
		if b.p == nil {
			return nil, invalid("a buffer was freed; allocate it with NewBuffer")
		}
	}
	for _, b := range bufs {
		b.inFlight++
	}
	return func() {
		for _, b := range bufs {
			b.inFlight--
		}
	}, nil
}

// AllreduceStart starts an allreduce of in into out (the same Buffer twice: in place).
func AllreduceStart[T Element](c *Comm, in, out *Buffer[T], op ReduceOp) (*Request, error) {
	release, err := use(in, out)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_allreduce(c.raw, C.int(dtypeOf[T]()), in.p, C.uint64_t(in.n), out.p, C.uint64_t(out.n), C.int(op), &r, &msg)
	return track(s, msg, r, release)
}

// BroadcastStart starts a broadcast of root's buf.
func BroadcastStart[T Element](c *Comm, buf *Buffer[T], root int) (*Request, error) {
	release, err := use(buf)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_broadcast(c.raw, C.int(dtypeOf[T]()), buf.p, C.uint64_t(buf.n), C.uint32_t(root), &r, &msg)
	return track(s, msg, r, release)
}

// AllreduceCompressedStart starts a compressed allreduce; the codec belongs to the request until it completes.
func (c *Comm) AllreduceCompressedStart(codec *Codec, ctx CodecContext, in, out *Buffer[float32], op ReduceOp) (*Request, error) {
	release, err := use(in, out)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_allreduce_compressed(c.raw, codec.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), in.p,
		C.uint64_t(in.n), out.p, C.uint64_t(out.n), C.int(op), &r, &msg)
	return track(s, msg, r, release)
}

// AllreduceCompressedEFStart starts AllreduceCompressedEF; ef belongs to the request until it completes.
func (c *Comm) AllreduceCompressedEFStart(ef *ErrorFeedback, ctx CodecContext, in, out *Buffer[float32], op ReduceOp) (*Request, error) {
	release, err := use(in, out)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_allreduce_compressed_ef(c.raw, ef.raw, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), in.p,
		C.uint64_t(in.n), out.p, C.uint64_t(out.n), C.int(op), &r, &msg)
	return track(s, msg, r, release)
}

// ReduceScatterCompressedStart starts a compressed reduce-scatter; the codec belongs to the request until
// it completes.
func (c *Comm) ReduceScatterCompressedStart(codec *Codec, ctx CodecContext, in, out *Buffer[float32], op ReduceOp) (*Request, error) {
	release, err := use(in, out)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_reduce_scatter_compressed(c.raw, codec.raw, nil, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), in.p,
		C.uint64_t(in.n), out.p, C.uint64_t(out.n), C.int(op), &r, &msg)
	return track(s, msg, r, release)
}

// AllgatherCompressedStart starts a compressed allgather; the codec belongs to the request until it
// completes.
func (c *Comm) AllgatherCompressedStart(codec *Codec, ctx CodecContext, in, out *Buffer[float32]) (*Request, error) {
	release, err := use(in, out)
	if err != nil {
		return nil, err
	}
	var r *C.gw_request
	var msg *C.char
	s := C.go_allgather_compressed(c.raw, codec.raw, nil, C.uint64_t(ctx.Seed), C.uint64_t(ctx.Step), in.p,
		C.uint64_t(in.n), out.p, C.uint64_t(out.n), &r, &msg)
	return track(s, msg, r, release)
}

// BarrierStart starts a barrier.
func (c *Comm) BarrierStart() (*Request, error) {
	var r *C.gw_request
	var msg *C.char
	return track(C.go_barrier(c.raw, &r, &msg), msg, r, func() {})
}
