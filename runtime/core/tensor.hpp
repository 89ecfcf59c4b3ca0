// The one place the runtime reads and checks an application's gw_tensor. Every C ABI function that takes
// a tensor goes through read_tensor, then adds what it needs on top (host memory, a dtype set).
// Plugins check the tensors the host hands them with their own helper (plugins/common's CodecBase,
// transports): a plugin links nothing of the runtime, so that helper stays on its side of the ABI.
#pragma once

#include <gradwire/types.h>

#include <string>

namespace gw {

// The caller's tensor as this library's version of the struct (any struct_size at or above the first
// version), checked: not NULL, a known memory kind and dtype, data not NULL when count > 0. `what` names
// the tensor in messages ("in", "out", "tensor 'w': the gradient"). Throws GW_ERR_INVALID_ARGUMENT.
gw_tensor read_tensor(const gw_tensor* t, const std::string& what);

// GW_ERR_UNSUPPORTED unless the tensor is in host memory; `who` names what takes host memory only.
void require_host(const gw_tensor& t, const std::string& what, const std::string& who);

// GW_ERR_UNSUPPORTED unless the tensor's dtype is in `dtypes` (bits 1u << gw_dtype); `who` names what
// refuses it, `hint` says what to do instead.
void require_dtype(const gw_tensor& t, const std::string& what, uint32_t dtypes, const std::string& who,
                   const std::string& hint);

}  // namespace gw
