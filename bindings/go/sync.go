package gradwire

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// Sync is the synchronizer a trainer calls each step. It owns the gradient and parameter buffers
// (in C memory: gradwire keeps their addresses); Gradient and Parameter give Go views of them. While
// it exists, use its communicator only through it. Close it before the communicator.
type Sync struct {
	raw     *C.gw_sync
	tensors []syncTensor
}

type syncTensor struct{ grad, param *Buffer[float32] }

// NewSync creates a synchronizer over comm with rt's configuration ([codec], [schedule], [bucket]).
func NewSync(comm *Comm, rt *Runtime) (*Sync, error) {
	var raw *C.gw_sync
	var msg *C.char
	if err := call(C.go_sync_create(comm.raw, rt.raw, &raw, &msg), msg); err != nil {
		return nil, err
	}
	return &Sync{raw: raw}, nil
}

// Register adds a tensor of count f32 elements (with a parameter buffer when withParameter); returns its id.
func (s *Sync) Register(name string, count int, withParameter bool) (int, error) {
	t := syncTensor{grad: NewBuffer[float32](count)}
	var p unsafe.Pointer
	if withParameter {
		t.param = NewBuffer[float32](count)
		p = t.param.p
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg *C.char
	if err := call(C.go_sync_register(s.raw, cname, (*C.float)(t.grad.p), (*C.float)(p), C.uint64_t(count), &msg), msg); err != nil {
		t.grad.Free()
		if t.param != nil {
			t.param.Free()
		}
		return 0, err
	}
	s.tensors = append(s.tensors, t)
	return len(s.tensors) - 1, nil
}

// RegisterShape gives a registered tensor its shape (the product of dims is its count), before Finalize:
// codecs that work on matrices (powersgd) see it as dims[0] x the rest. Since ABI 1.4.
func (s *Sync) RegisterShape(name string, dims []int64) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	cdims := make([]C.int64_t, len(dims)+1) // never empty: its address is passed
	for i, d := range dims {
		cdims[i] = C.int64_t(d)
	}
	var msg *C.char
	return call(C.go_sync_register_shape(s.raw, cname, C.uint32_t(len(dims)), &cdims[0], &msg), msg)
}

// Finalize fuses the tensors into buckets and checks every rank registered the same ones (collective).
func (s *Sync) Finalize() error {
	var msg *C.char
	return call(C.go_sync_finalize(s.raw, &msg), msg)
}

// Gradient is the gradient buffer of tensor id (a view of C memory, valid until Close).
func (s *Sync) Gradient(id int) []float32 { return s.tensors[id].grad.Slice() }

// Parameter is the parameter buffer of tensor id, nil without one.
func (s *Sync) Parameter(id int) []float32 {
	if s.tensors[id].param == nil {
		return nil
	}
	return s.tensors[id].param.Slice()
}

// StepFlags are the GW_SYNC_* bits of a step.
type StepFlags uint32

func (f StepFlags) Apply() bool             { return f&C.GW_SYNC_APPLY != 0 }
func (f StepFlags) GradientsAveraged() bool { return f&C.GW_SYNC_GRADIENTS_AVERAGED != 0 }

// OuterStep: an outer step of the schedule "diloco" set some parameters (docs/diloco.md).
func (f StepFlags) OuterStep() bool { return f&C.GW_SYNC_OUTER_STEP != 0 }

// Step ends a step (collective); apply the optimizer only when flags.Apply().
func (s *Sync) Step() (StepFlags, error) {
	var f C.uint32_t
	var msg *C.char
	err := call(C.go_sync_step(s.raw, &f, &msg), msg)
	return StepFlags(f), err
}

// SyncStats is the accounting of all buckets.
type SyncStats struct {
	RawBytes, WireBytes uint64
	CompressionRatio    float64
	Steps, Syncs        uint64
}

func (s *Sync) Stats() (SyncStats, error) {
	var st C.gw_sync_stats
	var msg *C.char
	err := call(C.go_sync_stats(s.raw, C.GW_SYNC_ALL_BUCKETS, &st, &msg), msg)
	return SyncStats{uint64(st.raw_bytes), uint64(st.wire_bytes), float64(st.compression_ratio), uint64(st.steps),
		uint64(st.syncs)}, err
}

// Close waits for exchanges in flight, destroys the synchronizer and frees its buffers.
func (s *Sync) Close() error {
	var msg *C.char
	err := call(C.go_sync_destroy(s.raw, &msg), msg)
	if err == nil {
		for _, t := range s.tensors {
			t.grad.Free()
			if t.param != nil {
				t.param.Free()
			}
		}
		s.tensors = nil
		s.raw = nil
	}
	return err
}
