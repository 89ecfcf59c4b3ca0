// The little CUDA the runtime itself needs around a codec on device tensors: the 32-byte wire header and
// the workspace live in device memory like the body. Without CUDA in the build every call fails with
// GW_ERR_UNSUPPORTED (device tensors never reach here then: codecs without GW_CODEC_CUDA refuse them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::device {

// Host -> device, ordered on `stream` (a cudaStream_t); `src` may be reused when this returns.
void copy_to_device(void* dst, const void* src, size_t bytes, void* stream);
// Device -> host: waits for `stream`'s earlier work and the copy.
void copy_to_host(void* dst, const void* src, size_t bytes, void* stream);

// Waits for the work queued on `stream`.
void synchronize(void* stream);
// Makes `device` the calling thread's current CUDA device (the collectives run on the progress thread).
void use_device(int device);
// Device -> device, ordered on `stream`.
void copy_on_device(void* dst, const void* src, size_t bytes, void* stream);
// dst[i] = dst[i] + src[i] for f32, ordered on `stream` (device_kernels.cu).
void add_f32(float* dst, const float* src, uint64_t count, void* stream);
// out[i] = a[i] - b[i] for f32 (error feedback's new residual), ordered on `stream`.
void subtract_f32(float* out, const float* a, const float* b, uint64_t count, void* stream);
// Zeroes `bytes` of device memory, ordered on `stream`.
void zero(void* dst, size_t bytes, void* stream);
// x[i] divided by n, rounded as gw::coll::divide rounds on the host (a multiplication by the inverse
// when n is a power of two, a division otherwise: the same bits), ordered on `stream`.
void divide_f32(float* x, uint64_t count, uint32_t n, void* stream);

// Device scratch that grows on demand and is freed with the object.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* reserve(size_t bytes);  // valid until the next reserve or destruction
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gw::device
