#include "codec/device.hpp"

#include <string>

#include "core/error.hpp"

#if defined(GW_WITH_CUDA_RUNTIME)
#include <cuda_runtime_api.h>
#endif

namespace gw::device {

#if defined(GW_WITH_CUDA_RUNTIME)
namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    fail(GW_ERR_INTERNAL, std::string(what) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
}  // namespace

void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
        "copying the wire header to device memory");
}

void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream)),
        "copying the wire header from device memory");
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for the codec's stream");
}

Buffer::~Buffer() {
  if (data_ != nullptr) cudaFree(data_);
}

void* Buffer::reserve(size_t bytes) {
  if (bytes <= size_) return data_;
  if (data_ != nullptr) check(cudaFree(data_), "freeing the codec workspace");
  data_ = nullptr;
  size_ = 0;
  check(cudaMalloc(&data_, bytes), "allocating the codec workspace");
  size_ = bytes;
  return data_;
}
#else
namespace {
[[noreturn]] void no_cuda() {
  fail(GW_ERR_UNSUPPORTED, "this gradwire was built without CUDA; rebuild with GW_WITH_CUDA=ON for device tensors");
}
}  // namespace
void copy_to_device(void*, const void*, size_t, void*) { no_cuda(); }
void copy_to_host(void*, const void*, size_t, void*) { no_cuda(); }
Buffer::~Buffer() = default;
void* Buffer::reserve(size_t bytes) {
  if (bytes == 0) return nullptr;
  no_cuda();
}
#endif

}  // namespace gw::device
