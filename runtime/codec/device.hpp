// The little CUDA the runtime itself needs around a codec on device tensors: the 32-byte wire header and
// the workspace live in device memory like the body. Without CUDA in the build every call fails with
// GW_ERR_UNSUPPORTED (device tensors never reach here then: codecs without GW_CODEC_CUDA refuse them).
#pragma once

#include <cstddef>

namespace gw::device {

// Host -> device, ordered on `stream` (a cudaStream_t); `src` may be reused when this returns.
void copy_to_device(void* dst, const void* src, size_t bytes, void* stream);
// Device -> host: waits for `stream`'s earlier work and the copy.
void copy_to_host(void* dst, const void* src, size_t bytes, void* stream);

// Device scratch that grows on demand and is freed with the object.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* reserve(size_t bytes);  // valid until the next reserve or destruction

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gw::device
