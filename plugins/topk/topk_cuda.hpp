// The CUDA implementation of topk (topk_cuda.cu): the same selection procedure (topk_select.hpp) on a
// device backend, and the same body bytes as the CPU path. The body lives in device memory, like the
// tensor; work is ordered on the tensor's stream, and the call returns once the body is written.
#pragma once

#include <gradwire/types.h>

#include <memory>

#include "gw_codec/codec_base.hpp"
#include "topk_body.hpp"

namespace gwtopk {

class CudaTopk {
 public:
  CudaTopk();
  ~CudaTopk();
  CudaTopk(const CudaTopk&) = delete;
  CudaTopk& operator=(const CudaTopk&) = delete;

  uint64_t encode(const gwc::CodecBase& codec, const Settings& s, uint64_t k, const gw_tensor& in, void* body,
                  uint64_t capacity);
  // Validates the body on the host (it is copied there first), then scatters on the device.
  void decode(const gwc::CodecBase& codec, const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gwtopk
