// The CUDA implementation of randomk (randomk_cuda.cu): the same coordinates (randomk_coords.hpp) and
// body bytes as the CPU path; the body lives in device memory, work is ordered on the tensor's stream.
#pragma once

#include <gradwire/types.h>

#include "gw_codec/codec_base.hpp"
#include "randomk_body.hpp"

namespace gwrandomk {

class CudaRandomK {
 public:
  // Writes the whole body (preamble and k values) for p.
  void encode(const gwc::CodecBase& codec, const Preamble& p, const gw_tensor& in, void* body);
  // Reads the preamble back to the host, checks it, then scatters on the device.
  void decode(const gwc::CodecBase& codec, const uint8_t* body, uint64_t size, gw_tensor& out, bool accumulate);
};

}  // namespace gwrandomk
