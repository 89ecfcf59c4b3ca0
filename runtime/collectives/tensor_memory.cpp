// Host and CUDA memory for the compressed allreduce (collectives/compressed.hpp: TensorMemory).
#include <cstring>

#include "codec/device.hpp"
#include "collectives/compressed.hpp"
#include "kernels/reduce.hpp"

namespace gw::coll {

gw_tensor HostMemory::tensor(const float* x, uint64_t count) const {
  gw_tensor t = GW_TENSOR_INIT;
  t.data = const_cast<float*>(x);
  t.count = count;
  return t;
}

void* HostMemory::payload_scratch(uint64_t bytes) {
  if (payload_.size() < bytes) payload_.resize(bytes);
  return payload_.data();
}

void HostMemory::payload_to_host(void* host, const void* staged, uint64_t bytes) {
  if (host != staged) std::memcpy(host, staged, bytes);
}

void HostMemory::payload_from_host(void* staged, const void* host, uint64_t bytes) {
  if (host != staged) std::memcpy(staged, host, bytes);
}

void HostMemory::copy(float* dst, const float* src, uint64_t count) {
  if (dst != src) std::memmove(dst, src, count * 4);
}

void HostMemory::add(float* dst, const float* src, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) dst[i] += src[i];
}

void HostMemory::divide(float* x, uint64_t count, uint32_t n) { coll::divide(x, count, GW_DTYPE_F32, n); }

float* HostMemory::scratch(uint64_t count) {
  if (scratch_.size() < count) scratch_.resize(count);
  return scratch_.data();
}

namespace {

// The same operations with the codecs' CUDA kernels and gw::device's copies and kernels, every call on
// the tensor's device and stream (the algorithms run on the communicator's progress thread).
class CudaMemory final : public TensorMemory {
 public:
  CudaMemory(int device, void* stream) : device_(device), stream_(stream) {}

  gw_tensor tensor(const float* x, uint64_t count) const override {
    gw_tensor t = GW_TENSOR_INIT;
    t.data = const_cast<float*>(x);
    t.count = count;
    t.memory = GW_MEMORY_CUDA;
    t.device = device_;
    t.stream = stream_;
    device::use_device(device_);
    return t;
  }
  bool direct_payloads() const override { return false; }
  void* payload_scratch(uint64_t bytes) override {
    device::use_device(device_);
    return payload_.reserve(bytes);
  }
  void payload_to_host(void* host, const void* staged, uint64_t bytes) override {
    device::copy_to_host(host, staged, bytes, stream_);
  }
  void payload_from_host(void* staged, const void* host, uint64_t bytes) override {
    // The host payload may be reused by the transport as soon as this returns: copy_to_device's
    // contract. Ordered on the stream before the decode that reads it.
    device::copy_to_device(staged, host, bytes, stream_);
  }
  void copy(float* dst, const float* src, uint64_t count) override {
    device::use_device(device_);
    if (dst != src) device::copy_on_device(dst, src, count * 4, stream_);
  }
  void add(float* dst, const float* src, uint64_t count) override {
    device::use_device(device_);
    device::add_f32(dst, src, count, stream_);
  }
  void divide(float* x, uint64_t count, uint32_t n) override {
    device::use_device(device_);
    device::divide_f32(x, count, n, stream_);
  }
  float* scratch(uint64_t count) override {
    device::use_device(device_);
    return static_cast<float*>(scratch_.reserve(count * 4));
  }

 private:
  int device_;
  void* stream_;
  device::Buffer payload_, scratch_;
};

}  // namespace

std::unique_ptr<TensorMemory> cuda_memory(int device, void* stream) {
  return std::make_unique<CudaMemory>(device, stream);
}

}  // namespace gw::coll
