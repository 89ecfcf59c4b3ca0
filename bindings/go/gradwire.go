// Package gradwire is the Go binding of gradwire (compressed gradient communication) over its C ABI.
//
// Handles (Runtime, Codec, Comm, Sync, Buffer) are closed explicitly with Close; a closed handle is
// refused by gradwire with its own message. Every error is an *Error carrying gradwire's status and
// message; errors.Is(err, gradwire.ErrMismatch) tests the status. Blocking calls take Go slices (valid
// for cgo during the call); nonblocking ones take Buffers, allocated in C memory, because C keeps
// their address after the call returns. See README.md for the threading rules.
package gradwire

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Status is a gradwire status code. The Err* values are errors themselves, for errors.Is.
type Status int32

const (
	ErrInvalidArgument Status = -1
	ErrNoMemory        Status = -2
	ErrNotFound        Status = -3
	ErrPlugin          Status = -4
	ErrVersion         Status = -5
	ErrConfig          Status = -6
	ErrUnsupported     Status = -7
	ErrTimeout         Status = -8
	ErrMismatch        Status = -9
	ErrTransport       Status = -10
	ErrCorrupt         Status = -11
	ErrAborted         Status = -12
	ErrBufferTooSmall  Status = -13
	ErrState           Status = -14
	ErrInternal        Status = -15
)

// String is gradwire's name of the status ("GW_ERR_MISMATCH").
func (s Status) String() string { return C.GoString(C.gw_status_string(C.gw_status(s))) }

// Error makes a Status usable as an error value (the target of errors.Is).
func (s Status) Error() string { return s.String() }

// Error is a failed gradwire call: its status and gradwire's message (what was wrong, what to do).
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return e.Status.String() + ": " + e.Message }

// Unwrap returns the Status, so errors.Is(err, gradwire.ErrCorrupt) works.
func (e *Error) Unwrap() error { return e.Status }

// Version is the library's version ("0.1.0").
func Version() string { return C.GoString(C.gw_version_string()) }

// AbiVersion is the ABI version the library implements.
func AbiVersion() (major, minor uint32) {
	return uint32(C.gw_abi_version_major()), uint32(C.gw_abi_version_minor())
}

// DType is gradwire's element type.
type DType int32

const (
	F32  DType = 0
	F64  DType = 1
	F16  DType = 2
	BF16 DType = 3
	I32  DType = 4
	I64  DType = 5
	U8   DType = 6
)

func (d DType) String() string { return C.GoString(C.gw_dtype_name(C.gw_dtype(d))) }

// Half and BFloat16 are 16-bit floats stored as their bits.
type Half uint16
type BFloat16 uint16

// Element is every type a buffer may hold.
type Element interface {
	float32 | float64 | int32 | int64 | uint8 | Half | BFloat16
}

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return F32
	case float64:
		return F64
	case int32:
		return I32
	case int64:
		return I64
	case uint8:
		return U8
	case Half:
		return F16
	default:
		return BF16
	}
}

// ptr is the address of a slice's first element, nil for an empty slice.
func ptr[T Element](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// ReduceOp is a reduction operator.
type ReduceOp int32

const (
	Sum ReduceOp = 0
	Avg ReduceOp = 1
	Min ReduceOp = 2
	Max ReduceOp = 3
)

// RuntimeOptions configure NewRuntime. Empty: the default configuration.
type RuntimeOptions struct {
	ConfigPath     string
	ConfigText     string
	PluginPaths    []string
	NoEnvOverrides bool
}

// Runtime holds the configuration and the loaded plugins. Its methods may be called from any goroutine;
// Close must not run concurrently with another call on it.
type Runtime struct{ raw *C.gw_runtime }

// NewRuntime reads the configuration and loads the plugins.
func NewRuntime(o RuntimeOptions) (*Runtime, error) {
	var path, text *C.char
	if o.ConfigPath != "" {
		path = C.CString(o.ConfigPath)
		defer C.free(unsafe.Pointer(path))
	}
	if o.ConfigText != "" {
		text = C.CString(o.ConfigText)
		defer C.free(unsafe.Pointer(text))
	}
	var paths **C.char
	if n := len(o.PluginPaths); n > 0 {
		// A C array of C strings: C memory throughout.
		arr := (*[1 << 20]*C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0)))))[:n:n]
		for i, p := range o.PluginPaths {
			arr[i] = C.CString(p)
		}
		defer func() {
			for _, p := range arr {
				C.free(unsafe.Pointer(p))
			}
			C.free(unsafe.Pointer(&arr[0]))
		}()
		paths = &arr[0]
	}
	var flags C.uint32_t
	if o.NoEnvOverrides {
		flags |= C.GW_RUNTIME_NO_ENV_OVERRIDES
	}
	var raw *C.gw_runtime
	var msg *C.char
	s := C.go_runtime_create(path, text, paths, C.uint32_t(len(o.PluginPaths)), flags, C.GW_LOG_WARN, &raw, &msg)
	if err := call(s, msg); err != nil {
		return nil, err
	}
	return &Runtime{raw: raw}, nil
}

// Close destroys the runtime. Codecs and communicators made from it may outlive it.
func (r *Runtime) Close() error {
	var msg *C.char
	err := call(C.go_runtime_destroy(r.raw, &msg), msg)
	r.raw = nil
	return err
}

// ConfigDump is the effective configuration as TOML (reference: a Markdown reference of every key).
func (r *Runtime) ConfigDump(reference bool) (string, error) {
	format := C.int(C.GW_CONFIG_FORMAT_TOML)
	if reference {
		format = C.GW_CONFIG_FORMAT_REFERENCE
	}
	var n C.size_t
	var msg *C.char
	if err := call(C.go_config_dump(r.raw, format, nil, 0, &n, &msg), msg); err != nil {
		return "", err
	}
	buf := (*C.char)(C.malloc(n + 1))
	defer C.free(unsafe.Pointer(buf))
	if err := call(C.go_config_dump(r.raw, format, buf, n+1, &n, &msg), msg); err != nil {
		return "", err
	}
	return C.GoStringN(buf, C.int(n)), nil
}

// Plugin is what discovery found in one file.
type Plugin struct {
	Path, Name, Version string
	Err                 error // nil when loaded
}

// Plugins lists every plugin file discovery found, loaded or not.
func (r *Runtime) Plugins() ([]Plugin, error) {
	var n C.uint32_t
	var msg *C.char
	if err := call(C.go_plugin_count(r.raw, &n, &msg), msg); err != nil {
		return nil, err
	}
	out := make([]Plugin, 0, int(n))
	for i := C.uint32_t(0); i < n; i++ {
		var info C.gw_plugin_info
		if err := call(C.go_plugin_info(r.raw, i, &info, &msg), msg); err != nil {
			return nil, err
		}
		p := Plugin{Path: goString(info.path), Name: goString(info.name), Version: goString(info.version)}
		if info.status != C.GW_OK {
			p.Err = &Error{Status: Status(info.status), Message: goString(info.error)}
		}
		out = append(out, p)
	}
	return out, nil
}

// CodecContext is the seed and step every rank passes alike.
type CodecContext struct{ Seed, Step uint64 }

// Codec is a compressor on its own. Encode and Decode may not run concurrently on one codec.
type Codec struct{ raw *C.gw_codec }

// NewCodec creates the codec `name` with its [codec.<name>] configuration ("": the [codec] name).
func (r *Runtime) NewCodec(name string) (*Codec, error) {
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	var raw *C.gw_codec
	var msg *C.char
	if err := call(C.go_codec_create(r.raw, cname, &raw, &msg), msg); err != nil {
		return nil, err
	}
	return &Codec{raw: raw}, nil
}

// Close destroys the codec.
func (c *Codec) Close() error {
	var msg *C.char
	err := call(C.go_codec_destroy(c.raw, &msg), msg)
	c.raw = nil
	return err
}

// ErrorFeedback keeps, per tensor, what a codec's encodings dropped, and adds it to the next encoding.
// Comm.AllreduceCompressedEF uses it inside the collective. Close it before its codec.
type ErrorFeedback struct{ raw *C.gw_error_feedback }

// NewErrorFeedback creates error feedback around the codec.
func (c *Codec) NewErrorFeedback() (*ErrorFeedback, error) {
	var raw *C.gw_error_feedback
	var msg *C.char
	if err := call(C.go_error_feedback_create(c.raw, &raw, &msg), msg); err != nil {
		return nil, err
	}
	return &ErrorFeedback{raw: raw}, nil
}

// Close destroys the error feedback.
func (e *ErrorFeedback) Close() error {
	var msg *C.char
	err := call(C.go_error_feedback_destroy(e.raw, &msg), msg)
	e.raw = nil
	return err
}

// Reset forgets every residual (e.g. after the model was reloaded).
func (e *ErrorFeedback) Reset() error {
	var msg *C.char
	return call(C.go_error_feedback_reset(e.raw, &msg), msg)
}

// State returns the residuals as a blob for a checkpoint.
func (e *ErrorFeedback) State() ([]byte, error) {
	var n C.uint64_t
	var msg *C.char
	if err := call(C.go_error_feedback_state_size(e.raw, &n, &msg), msg); err != nil {
		return nil, err
	}
	buf := C.malloc(C.size_t(n) + 1)
	defer C.free(buf)
	var written C.uint64_t
	if err := call(C.go_error_feedback_save(e.raw, buf, n, &written, &msg), msg); err != nil {
		return nil, err
	}
	return C.GoBytes(buf, C.int(written)), nil
}

// LoadState replaces the residuals by a blob State returned (a damaged blob is ErrCorrupt, another
// codec's ErrMismatch).
func (e *ErrorFeedback) LoadState(blob []byte) error {
	var msg *C.char
	p := C.CBytes(blob)
	defer C.free(p)
	return call(C.go_error_feedback_load(e.raw, p, C.uint64_t(len(blob)), &msg), msg)
}

// Name is the codec's name.
func (c *Codec) Name() string { return goString(C.gw_codec_name(c.raw)) }

// MaxEncodedSize is the worst-case payload size (header included) for count elements of dtype.
func (c *Codec) MaxEncodedSize(d DType, count int) (int, error) {
	var b C.uint64_t
	var msg *C.char
	if err := call(C.go_codec_max(c.raw, C.int(d), C.uint64_t(count), &b, &msg), msg); err != nil {
		return 0, err
	}
	return int(b), nil
}

// Encode encodes in into a new payload (wire header included). ctx may be nil.
func Encode[T Element](c *Codec, ctx *CodecContext, in []T) ([]byte, error) {
	n, err := c.MaxEncodedSize(dtypeOf[T](), len(in))
	if err != nil {
		return nil, err
	}
	p := make([]byte, n)
	var size C.uint64_t
	var msg *C.char
	var seed, step uint64
	if ctx != nil {
		seed, step = ctx.Seed, ctx.Step
	}
	hasCtx := C.int(0)
	if ctx != nil {
		hasCtx = 1
	}
	s := C.go_codec_encode(c.raw, hasCtx, C.uint64_t(seed), C.uint64_t(step), C.int(dtypeOf[T]()), ptr(in),
		C.uint64_t(len(in)), unsafe.Pointer(&p[0]), C.uint64_t(len(p)), &size, &msg)
	if err := call(s, msg); err != nil {
		return nil, err
	}
	return p[:int(size)], nil
}

// Decode checks payload against the codec and out, then decodes into out (adds to it with accumulate).
func Decode[T Element](c *Codec, payload []byte, out []T, accumulate bool) error {
	var flags C.uint32_t
	if accumulate {
		flags = C.GW_DECODE_ACCUMULATE
	}
	var pp unsafe.Pointer
	if len(payload) > 0 {
		pp = unsafe.Pointer(&payload[0])
	}
	var msg *C.char
	return call(C.go_codec_decode(c.raw, pp, C.uint64_t(len(payload)), C.int(dtypeOf[T]()), ptr(out),
		C.uint64_t(len(out)), flags, &msg), msg)
}

func invalid(format string, args ...any) error {
	return &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf(format, args...)}
}
