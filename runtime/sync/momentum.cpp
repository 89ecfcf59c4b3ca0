// Two ways the synchronizer puts a codec where plain gradient averaging did not reach (docs/sync.md):
//
// - Compress after momentum ([codec] momentum = m > 0): every rank keeps a velocity v = m v + g per
//   bucket and exchanges v instead of g, so the codec (and its error feedback) sees the optimizer's state,
//   as 1-bit SGD / 1-bit Adam do. The application applies the average without momentum of its own. With
//   a lossless codec this is exactly momentum SGD on the averaged gradients (the average is linear).
// - Compressed parameter averaging (local SGD through a codec): the parameters' difference from the
//   last average (the anchor, identical on every rank) goes through the bucket's codec with its own error
//   feedback; the new parameters are anchor + average difference, again identical on every rank. The first
//   average of a bucket is dense: it makes the ranks' parameters equal and sets the anchor.
#include <cstring>

#include "codec/staging.hpp"
#include "comm/allreduce_start.hpp"
#include "sync/synchronizer.hpp"

namespace gw::sync {

void Synchronizer::apply_momentum(Bucket& b, float* x) {
  b.velocity.resize(b.count, 0.0f);
  float* v = b.velocity.data();
  const float m = momentum_;
  for (uint64_t i = 0; i < b.count; ++i) {
    v[i] = m * v[i] + x[i];
    x[i] = v[i];
  }
}

std::unique_ptr<Exchange> Synchronizer::start_parameter_exchange(uint32_t bucket) {
  Bucket& b = buckets_[bucket];
  auto e = std::make_unique<Exchange>();
  e->data.resize(b.count);
  float* x = e->data.data();
  for (uint32_t i : b.tensors) {
    const TensorEntry& t = tensors_[i];
    staging::read_f32(*t.parameter, x + t.offset);
  }
  e->started = std::chrono::steady_clock::now();
  const bool difference = b.codec && !b.anchor.empty();
  if (difference)
    for (uint64_t i = 0; i < b.count; ++i) x[i] -= b.anchor[i];
  start_average(bucket, difference, b.parameter_ef.get(), x, *e, std::nullopt, nullptr, kParameterBuffers);
  if (difference) ++b.exchanges;
  return e;
}

void Synchronizer::finish_parameter_exchange(uint32_t bucket, Exchange& e) {
  Bucket& b = buckets_[bucket];
  const bool difference = b.codec && !b.anchor.empty();
  finish(bucket, e);
  float* x = e.data.data();
  if (difference)
    for (uint64_t i = 0; i < b.count; ++i) x[i] += b.anchor[i];
  if (b.codec) b.anchor = e.data;
  for (uint32_t i : b.tensors) {
    const TensorEntry& t = tensors_[i];
    staging::write_f32(x + t.offset, *t.parameter);
  }
}

}  // namespace gw::sync
