#include "core/tensor.hpp"

#include <gradwire/gradwire.h>

#include "core/abi_struct.hpp"
#include "core/error.hpp"

namespace gw {

gw_tensor read_tensor(const gw_tensor* t, const std::string& what) {
  const gw_tensor out = abi::read(t, what.c_str());
  if (out.memory != GW_MEMORY_HOST && out.memory != GW_MEMORY_CUDA)
    fail(GW_ERR_INVALID_ARGUMENT, what + "->memory " + std::to_string(int(out.memory)) + " is not a gw_memory_kind");
  if (gw_dtype_size(out.dtype) == 0)
    fail(GW_ERR_INVALID_ARGUMENT, what + "->dtype " + std::to_string(int(out.dtype)) + " is not a gw_dtype");
  if (out.count > 0 && out.data == nullptr)
    fail(GW_ERR_INVALID_ARGUMENT, what + "->data is NULL but its count is " + std::to_string(out.count));
  return out;
}

void require_host(const gw_tensor& t, const std::string& what, const std::string& who) {
  if (t.memory != GW_MEMORY_HOST) fail(GW_ERR_UNSUPPORTED, what + ": " + who + " takes host memory only");
}

void require_dtype(const gw_tensor& t, const std::string& what, uint32_t dtypes, const std::string& who,
                   const std::string& hint) {
  if (uint32_t(t.dtype) >= 32 || !(dtypes & (1u << uint32_t(t.dtype))))
    fail(GW_ERR_UNSUPPORTED, what + " is " + gw_dtype_name(t.dtype) + "; " + who + " does not accept it" +
                                 (hint.empty() ? "" : " (" + hint + ")"));
}

}  // namespace gw
