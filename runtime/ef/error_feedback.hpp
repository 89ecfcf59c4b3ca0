// Error feedback around a lossy codec: each buffer keeps the residual of its last encoding and adds it
// to the next input, so what a codec drops is sent later instead of lost:
//   x' = x + residual;  payload = encode(x');  residual = x' - decode(payload).
// Over T steps, the sum of what was decoded equals the sum of the inputs minus the last residual, so
// the gap does not grow with T. Residuals live as f32 in the memory of the tensors they belong to: host
// memory, or the CUDA device of a device tensor (the same arithmetic in kernels that round alike, so a
// device residual holds the host one's bits). The state (every buffer's residual) is saved and restored
// as a versioned blob with a checksum; a loaded residual moves to the device at its buffer's next
// device encoding.
#pragma once

#include <gradwire/gradwire.h>

#include <cstdint>
#include <map>
#include <vector>

#include "codec/codec.hpp"
#include "codec/device.hpp"

namespace gw {

// The numeric core: x_plus = x + residual (elementwise), and after the caller encoded and decoded
// x_plus into `decoded`, residual = x_plus - decoded.
void ef_add_residual(const float* x, const float* residual, float* x_plus, uint64_t n);
void ef_update_residual(const float* x_plus, const float* decoded, float* residual, uint64_t n);

class ErrorFeedback {
 public:
  explicit ErrorFeedback(Codec& codec) : codec_(codec) {}

  // Encodes in + residual[buffer_id] into payload and updates the residual; returns the payload size.
  // A CUDA tensor's payload is device memory too (as Codec::encode writes it), and its residual stays
  // on the tensor's device.
  uint64_t encode(uint64_t buffer_id, const gw_codec_context& ctx, const gw_tensor& in, void* payload,
                  uint64_t capacity);
  void reset();
  Codec& codec() const { return codec_; }

  uint64_t state_size() const;
  uint64_t save(void* buf, uint64_t capacity) const;
  void load(const void* buf, uint64_t size);

  // The residual of a buffer (empty when the buffer has not been encoded yet), copied from the device
  // when it lives there.
  const std::vector<float>& residual(uint64_t buffer_id) const;

  // Every residual, to roll back encodings whose result was discarded (a skipped training step; gw_sync
  // encodes host buckets only).
  using Residuals = std::map<uint64_t, std::vector<float>>;
  const Residuals& residuals() const;
  void restore(Residuals residuals) {
    residuals_ = std::move(residuals);
    on_device_.clear();
  }

 private:
  uint64_t encode_on_device(uint64_t buffer_id, const gw_codec_context& ctx, const gw_tensor& in, void* payload,
                            uint64_t capacity);
  struct DeviceResidual {
    device::Buffer data;
    uint64_t count = 0;
    void* stream = nullptr;  // where it was last written
  };
  // Every device residual copied into residuals_ (for save, residual(), residuals()); a read.
  void fetch_all() const;

  Codec& codec_;
  mutable std::map<uint64_t, std::vector<float>> residuals_;
  // Buffers whose residual lives on the device (authoritative; residuals_ holds copies made by fetch_all).
  std::map<uint64_t, DeviceResidual> on_device_;
  int device_ = -1;  // the CUDA device of every device residual and scratch
  std::vector<float> x_plus_, decoded_;
  device::Buffer x_plus_device_, decoded_device_;
};

}  // namespace gw

struct gw_error_feedback {
  gw::ErrorFeedback impl;
};
