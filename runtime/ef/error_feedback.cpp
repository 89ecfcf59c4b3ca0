#include "ef/error_feedback.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace gw {
namespace {

constexpr uint32_t kMagic = 0x46455747u;  // "GWEF" as little-endian bytes
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeader = 4 + 4 + 4 + 4 + 8;  // magic, version, codec id, reserved, buffers
constexpr uint64_t kTrailer = 8;                 // FNV-1a 64 of every preceding byte

uint64_t fnv1a64(const unsigned char* p, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void put(unsigned char*& p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) *p++ = static_cast<unsigned char>(v >> (8 * i));
}
uint64_t get(const unsigned char*& p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(*p++) << (8 * i);
  return v;
}

[[noreturn]] void bad_blob(const std::string& what) {
  fail(GW_ERR_CORRUPT, "error-feedback state blob is invalid: " + what +
                           "; pass the bytes gw_error_feedback_save wrote, unmodified");
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
  require_struct(&in, in.struct_size, sizeof(gw_tensor), "in");
  if (in.memory != GW_MEMORY_HOST)
    fail(GW_ERR_UNSUPPORTED, "error feedback keeps residuals in host memory; pass a host tensor (device residuals "
                             "are not built yet)");
  if (in.dtype != GW_DTYPE_F32)
    fail(GW_ERR_UNSUPPORTED, std::string("error feedback accepts f32 tensors, not ") + gw_dtype_name(in.dtype));
  if (in.count > 0 && in.data == nullptr) fail(GW_ERR_INVALID_ARGUMENT, "in->data is NULL");
  auto [it, fresh] = residuals_.try_emplace(buffer_id);
  std::vector<float>& r = it->second;
  if (fresh) r.assign(in.count, 0.0f);
  if (r.size() != in.count)
    fail(GW_ERR_MISMATCH, "buffer " + std::to_string(buffer_id) + " had " + std::to_string(r.size()) +
                              " elements and now has " + std::to_string(in.count) +
                              "; use one buffer id per tensor or bucket, or reset the error feedback");
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

void ErrorFeedback::reset() { residuals_.clear(); }

const std::vector<float>& ErrorFeedback::residual(uint64_t buffer_id) const {
  static const std::vector<float> none;
  auto it = residuals_.find(buffer_id);
  return it == residuals_.end() ? none : it->second;
}

uint64_t ErrorFeedback::state_size() const {
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
    // Little-endian hosts (the wire format's rule). An empty residual has no data pointer, and memcpy's
    // arguments must not be null even for 0 bytes.
    if (!r.empty()) std::memcpy(p, r.data(), 4 * r.size());
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
    if (count > 0) std::memcpy(r.data(), p, 4 * count);  // a buffer of 0 elements has no data pointer
    p += 4 * count;
    if (!loaded.emplace(id, std::move(r)).second) bad_blob("buffer " + std::to_string(id) + " appears twice");
  }
  if (p != end) bad_blob(std::to_string(end - p) + " bytes follow the last buffer");
  residuals_ = std::move(loaded);
}

}  // namespace gw
