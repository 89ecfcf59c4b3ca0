#include "ef/error_feedback.hpp"

#include <cstring>
#include <string>

#include "core/bytes.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace gw {
namespace {

constexpr uint32_t kMagic = 0x46455747u;  // "GWEF" as little-endian bytes
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeader = 4 + 4 + 4 + 4 + 8;  // magic, version, codec id, reserved, buffers
constexpr uint64_t kTrailer = 8;                 // FNV-1a 64 of every preceding byte

void put(unsigned char*& p, uint64_t v, int n) {
  bytes::put_le(p, v, n);
  p += n;
}
uint64_t get(const unsigned char*& p, int n) {
  const uint64_t v = bytes::get_le(p, n);
  p += n;
  return v;
}
using bytes::fnv1a64;

[[noreturn]] void bad_blob(const std::string& what) {
  fail(GW_ERR_CORRUPT, "error-feedback state blob is invalid: " + what +
                           "; pass the bytes gw_error_feedback_save wrote, unmodified");
}

[[noreturn]] void count_changed(uint64_t buffer_id, uint64_t had, uint64_t now) {
  fail(GW_ERR_MISMATCH, "buffer " + std::to_string(buffer_id) + " had " + std::to_string(had) + " elements and now has " +
                            std::to_string(now) + "; use one buffer id per tensor or bucket, or reset the error feedback");
}

}  // namespace

void ef_add_residual(const float* x, const float* residual, float* x_plus, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) x_plus[i] = x[i] + residual[i];
}

void ef_update_residual(const float* x_plus, const float* decoded, float* residual, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) residual[i] = x_plus[i] - decoded[i];
}

uint64_t ErrorFeedback::encode(uint64_t buffer_id, const gw_codec_context& ctx, const gw_tensor& in, void* payload,
                               uint64_t capacity) {
  // `in` was read and checked where it entered (gw::read_tensor).
  require_dtype(in, "in", 1u << GW_DTYPE_F32, "error feedback", "it takes f32 tensors");
  if (in.memory == GW_MEMORY_CUDA) return encode_on_device(buffer_id, ctx, in, payload, capacity);
  require_host(in, "in", "error feedback (its residuals live in host or CUDA memory)");
  if (on_device_.count(buffer_id))
    fail(GW_ERR_INVALID_ARGUMENT, "buffer " + std::to_string(buffer_id) + "'s residual lives on CUDA device " +
                                      std::to_string(device_) + ", and this tensor is host memory; keep a buffer in one "
                                      "memory, or reset the error feedback");
  auto [it, fresh] = residuals_.try_emplace(buffer_id);
  std::vector<float>& r = it->second;
  if (fresh) r.assign(in.count, 0.0f);
  if (r.size() != in.count) count_changed(buffer_id, r.size(), in.count);
  x_plus_.resize(in.count);
  decoded_.resize(in.count);
  ef_add_residual(static_cast<const float*>(in.data), r.data(), x_plus_.data(), in.count);
  gw_tensor t = in;
  t.data = x_plus_.data();
  const uint64_t size = codec_.encode(ctx, t, payload, capacity);
  t.data = decoded_.data();
  codec_.decode(ctx, payload, size, t, 0);
  ef_update_residual(x_plus_.data(), decoded_.data(), r.data(), in.count);
  return size;
}

uint64_t ErrorFeedback::encode_on_device(uint64_t buffer_id, const gw_codec_context& ctx, const gw_tensor& in,
                                         void* payload, uint64_t capacity) {
  if (device_ >= 0 && in.device != device_)
    fail(GW_ERR_INVALID_ARGUMENT, "this error feedback keeps its residuals on CUDA device " + std::to_string(device_) +
                                      " and the tensor is on device " + std::to_string(in.device) +
                                      "; use one error feedback per device");
  device::use_device(in.device);
  device_ = in.device;
  const uint64_t n = in.count;
  auto [it, fresh] = on_device_.try_emplace(buffer_id);
  DeviceResidual& r = it->second;
  if (fresh) {
    auto host = residuals_.find(buffer_id);
    if (host != residuals_.end() && host->second.size() != n) {
      const uint64_t had = host->second.size();
      on_device_.erase(it);
      count_changed(buffer_id, had, n);
    }
    r.count = n;
    void* data = r.data.reserve(4 * n);
    if (host != residuals_.end()) {
      device::copy_to_device(data, host->second.data(), 4 * n, in.stream);  // loaded from a blob
      residuals_.erase(host);
    } else {
      device::zero(data, 4 * n, in.stream);
    }
  }
  if (r.count != n) count_changed(buffer_id, r.count, n);
  auto* residual = static_cast<float*>(r.data.reserve(4 * n));
  auto* x_plus = static_cast<float*>(x_plus_device_.reserve(4 * n));
  auto* decoded = static_cast<float*>(decoded_device_.reserve(4 * n));
  // The host path's arithmetic, in the same order: x + residual, encode, decode, x_plus - decoded.
  device::copy_on_device(x_plus, in.data, 4 * n, in.stream);
  device::add_f32(x_plus, residual, n, in.stream);
  gw_tensor t = in;
  t.data = x_plus;
  const uint64_t size = codec_.encode(ctx, t, payload, capacity);
  t.data = decoded;
  codec_.decode(ctx, payload, size, t, 0);
  device::subtract_f32(residual, x_plus, decoded, n, in.stream);
  r.stream = in.stream;
  residuals_.erase(buffer_id);  // a copy fetch_all made is stale now
  return size;
}

void ErrorFeedback::fetch_all() const {
  for (const auto& [id, r] : on_device_) {
    std::vector<float>& host = residuals_[id];
    host.resize(r.count);
    device::use_device(device_);
    device::copy_to_host(host.data(), r.data.data(), 4 * r.count, r.stream);
  }
}

const ErrorFeedback::Residuals& ErrorFeedback::residuals() const {
  fetch_all();
  return residuals_;
}

void ErrorFeedback::reset() {
  residuals_.clear();
  on_device_.clear();
}

const std::vector<float>& ErrorFeedback::residual(uint64_t buffer_id) const {
  static const std::vector<float> none;
  if (on_device_.count(buffer_id)) fetch_all();
  auto it = residuals_.find(buffer_id);
  return it == residuals_.end() ? none : it->second;
}

uint64_t ErrorFeedback::state_size() const {
  fetch_all();
  uint64_t n = kHeader + kTrailer;
  for (const auto& [id, r] : residuals_) n += 16 + 4 * r.size();
  return n;
}

uint64_t ErrorFeedback::save(void* buf, uint64_t capacity) const {
  const uint64_t need = state_size();
  if (capacity < need)
    fail(GW_ERR_BUFFER_TOO_SMALL, "error-feedback state needs " + std::to_string(need) + " bytes, the buffer holds " +
                                      std::to_string(capacity) + "; ask gw_error_feedback_state_size first");
  auto* start = static_cast<unsigned char*>(require(buf, "buf"));
  unsigned char* p = start;
  put(p, kMagic, 4);
  put(p, kVersion, 4);
  put(p, codec_.id(), 4);
  put(p, 0, 4);
  put(p, residuals_.size(), 8);
  for (const auto& [id, r] : residuals_) {
    put(p, id, 8);
    put(p, r.size(), 8);
    bytes::put_f32s(p, r.data(), r.size());
    p += 4 * r.size();
  }
  put(p, fnv1a64(start, uint64_t(p - start)), 8);
  return need;
}

void ErrorFeedback::load(const void* buf, uint64_t size) {
  if (size > 0) require(buf, "buf");
  if (size < kHeader + kTrailer) bad_blob(std::to_string(size) + " bytes is shorter than its header");
  const auto* start = static_cast<const unsigned char*>(buf);
  const unsigned char* p = start;
  if (get(p, 4) != kMagic) bad_blob("it does not start with 'GWEF'");
  const uint64_t version = get(p, 4);
  if (version != kVersion)
    fail(GW_ERR_VERSION, "error-feedback state blob has version " + std::to_string(version) + "; this gradwire reads " +
                             std::to_string(kVersion));
  const uint64_t codec_id = get(p, 4);
  if (get(p, 4) != 0) bad_blob("its reserved word is not 0");
  const uint64_t buffers = get(p, 8);
  const unsigned char* end = start + size - kTrailer;
  const unsigned char* q = end;
  if (get(q, 8) != fnv1a64(start, size - kTrailer)) bad_blob("its checksum does not match");
  if (codec_id != codec_.id())
    fail(GW_ERR_MISMATCH, "error-feedback state was saved for another codec (id " + std::to_string(codec_id) +
                              "), not '" + codec_.name() + "'");
  std::map<uint64_t, std::vector<float>> loaded;
  for (uint64_t b = 0; b < buffers; ++b) {
    if (uint64_t(end - p) < 16) bad_blob("buffer " + std::to_string(b) + " is cut off");
    const uint64_t id = get(p, 8), count = get(p, 8);
    if (count > uint64_t(end - p) / 4) bad_blob("buffer " + std::to_string(id) + " announces more data than the blob has");
    std::vector<float> r(count);
    bytes::get_f32s(p, r.data(), count);
    p += 4 * count;
    if (!loaded.emplace(id, std::move(r)).second) bad_blob("buffer " + std::to_string(id) + " appears twice");
  }
  if (p != end) bad_blob(std::to_string(end - p) + " bytes follow the last buffer");
  residuals_ = std::move(loaded);
  on_device_.clear();  // the loaded residuals move to the device at their buffers' next device encoding
}

}  // namespace gw
