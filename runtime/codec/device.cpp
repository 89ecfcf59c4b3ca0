#include "codec/device.hpp"

#include <string>

#include "core/error.hpp"

#if defined(GW_WITH_CUDA_RUNTIME)
#include <cuda_runtime_api.h>

#include "codec/device_kernels.hpp"
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

void add_f32(float* dst, const float* src, uint64_t count, void* stream) {
  check(cudaError_t(kernels::add_f32(dst, src, count, stream)), "adding on the device");
}

void subtract_f32(float* out, const float* a, const float* b, uint64_t count, void* stream) {
  check(cudaError_t(kernels::subtract_f32(out, a, b, count, stream)), "subtracting on the device");
}

void zero(void* dst, size_t bytes, void* stream) {
  check(cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream)), "zeroing device memory");
}

void divide_f32(float* x, uint64_t count, uint32_t n, void* stream) {
  check(cudaError_t(kernels::divide_f32(x, count, n, stream)), "dividing on the device");
}

void synchronize(void* stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for the tensor's stream");
}

void use_device(int device) {
  const cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    fail(GW_ERR_INVALID_ARGUMENT, "the tensor is on CUDA device " + std::to_string(device) + ", which this process "
                                  "cannot use (" + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
                                  "); pass a tensor on a visible device, or host memory");
}

void copy_on_device(void* dst, const void* src, size_t bytes, void* stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)),
        "copying within device memory");
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
void synchronize(void*) { no_cuda(); }
void use_device(int) { no_cuda(); }
void copy_on_device(void*, const void*, size_t, void*) { no_cuda(); }
void add_f32(float*, const float*, uint64_t, void*) { no_cuda(); }
void divide_f32(float*, uint64_t, uint32_t, void*) { no_cuda(); }
void subtract_f32(float*, const float*, const float*, uint64_t, void*) { no_cuda(); }
void zero(void*, size_t, void*) { no_cuda(); }
Buffer::~Buffer() = default;
void* Buffer::reserve(size_t bytes) {
  if (bytes == 0) return nullptr;
  no_cuda();
}
#endif

}  // namespace gw::device
