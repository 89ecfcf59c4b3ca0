package gradwire

/*
#cgo pkg-config: gradwire
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// call turns a status and the copied message into an error (nil for GW_OK and GW_IN_PROGRESS).
func call(s C.gw_status, msg *C.char) error {
	if s >= 0 {
		return nil
	}
	m := ""
	if msg != nil {
		m = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	return &Error{Status: Status(s), Message: m}
}

func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}
