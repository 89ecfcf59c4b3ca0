#include "codec/staging.hpp"

#include <gradwire/gradwire.h>
#include <gw_kernels/fp16.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec/device.hpp"
#include "core/error.hpp"

namespace gw::staging {
namespace {

uint32_t size_of(gw_dtype d) { return d == GW_DTYPE_F32 ? 4 : 2; }

void require(const gw_tensor& t) {
  if (!supported(t.dtype))
    fail(GW_ERR_UNSUPPORTED, std::string("a ") + (gw_dtype_name(t.dtype) ? gw_dtype_name(t.dtype) : "?") +
                                 " tensor cannot be staged through f32; f32, f16 and bf16 can");
  if (t.memory != GW_MEMORY_HOST && t.memory != GW_MEMORY_CUDA)
    fail(GW_ERR_INVALID_ARGUMENT, "tensor memory " + std::to_string(int(t.memory)) + " is not a gw_memory_kind");
}

// The tensor's raw bytes in host memory: the tensor itself, or (device) a per-thread staging copy.
const unsigned char* host_bytes(const gw_tensor& t) {
  if (t.memory == GW_MEMORY_HOST) return static_cast<const unsigned char*>(t.data);
  thread_local std::vector<unsigned char> staged;
  staged.resize(t.count * size_of(t.dtype));
  device::copy_to_host(staged.data(), t.data, staged.size(), t.stream);
  return staged.data();
}

template <class F>
void for_each_value(const gw_tensor& t, F&& f) {
  require(t);
  if (t.count == 0) return;
  const unsigned char* p = host_bytes(t);
  switch (t.dtype) {
    case GW_DTYPE_F32: {
      for (uint64_t i = 0; i < t.count; ++i) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        f(i, v);
      }
      break;
    }
    case GW_DTYPE_F16:
    case GW_DTYPE_BF16: {
      const bool half = t.dtype == GW_DTYPE_F16;
      for (uint64_t i = 0; i < t.count; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        f(i, half ? kernels::f16_to_f32(h) : kernels::bf16_to_f32(h));
      }
      break;
    }
    default: break;
  }
}

}  // namespace

bool supported(gw_dtype d) { return d == GW_DTYPE_F32 || d == GW_DTYPE_F16 || d == GW_DTYPE_BF16; }

void read_f32(const gw_tensor& t, float* out) {
  if (t.dtype == GW_DTYPE_F32 && t.memory == GW_MEMORY_HOST) {
    if (t.count > 0) std::memcpy(out, t.data, 4 * t.count);
    return;
  }
  for_each_value(t, [out](uint64_t i, float v) { out[i] = v; });
}

void add_f32(const gw_tensor& t, float* out) {
  for_each_value(t, [out](uint64_t i, float v) { out[i] += v; });
}

void write_f32(const float* in, const gw_tensor& t) {
  require(t);
  if (t.count == 0) return;
  if (t.dtype == GW_DTYPE_F32 && t.memory == GW_MEMORY_HOST) {
    std::memcpy(t.data, in, 4 * t.count);
    return;
  }
  thread_local std::vector<unsigned char> staged;
  unsigned char* p = t.memory == GW_MEMORY_HOST ? static_cast<unsigned char*>(t.data)
                                                : (staged.resize(t.count * size_of(t.dtype)), staged.data());
  if (t.dtype == GW_DTYPE_F32) {
    std::memcpy(p, in, 4 * t.count);
  } else {
    const bool half = t.dtype == GW_DTYPE_F16;
    for (uint64_t i = 0; i < t.count; ++i) {
      const uint16_t h = half ? kernels::f32_to_f16(in[i]) : kernels::f32_to_bf16(in[i]);
      std::memcpy(p + 2 * i, &h, 2);
    }
  }
  if (t.memory == GW_MEMORY_CUDA) device::copy_to_device(t.data, p, t.count * size_of(t.dtype), t.stream);
}

}  // namespace gw::staging
