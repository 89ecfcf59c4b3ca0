// Versions, status names and dtype helpers of the C ABI.
#include <gradwire/gradwire.h>

#include "core/error.hpp"

extern "C" {

GW_API uint32_t gw_version(void) { return GW_VERSION_MAJOR * 10000u + GW_VERSION_MINOR * 100u + GW_VERSION_PATCH; }
GW_API const char* gw_version_string(void) { return GW_VERSION_STRING; }
GW_API uint32_t gw_abi_version_major(void) { return GW_ABI_VERSION_MAJOR; }
GW_API uint32_t gw_abi_version_minor(void) { return GW_ABI_VERSION_MINOR; }
GW_API const char* gw_status_string(gw_status status) { return gw::status_name(status); }
GW_API const char* gw_last_error(void) { return gw::last_error(); }

GW_API const char* gw_dtype_name(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: return "f32";
    case GW_DTYPE_F64: return "f64";
    case GW_DTYPE_F16: return "f16";
    case GW_DTYPE_BF16: return "bf16";
    case GW_DTYPE_I32: return "i32";
    case GW_DTYPE_I64: return "i64";
    case GW_DTYPE_U8: return "u8";
    case GW_DTYPE_FORCE_32BIT: break;
  }
  return "?";
}

GW_API uint32_t gw_dtype_size(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: case GW_DTYPE_I32: return 4;
    case GW_DTYPE_F64: case GW_DTYPE_I64: return 8;
    case GW_DTYPE_F16: case GW_DTYPE_BF16: return 2;
    case GW_DTYPE_U8: return 1;
    case GW_DTYPE_FORCE_32BIT: break;
  }
  return 0;
}

}  // extern "C"
