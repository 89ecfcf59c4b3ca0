// The synchronizer's checkpoint blob (little-endian; docs/sync.md):
//   "GWSY" u32 magic, u32 version,
//   u64 steps, u64 micro-steps, str schedule name, bytes schedule state,
//   u32 buckets, then per bucket: str codec, u32 tensors (str name, u64 count each), u64 exchanges,
//     u8 has accumulator [f32 × count], bytes error-feedback state (empty: none),
//   u32 background slots, then per slot: u64 slot, per bucket f32 × count (the finished average),
//   u64 FNV-1a 64 of every preceding byte.
// str and bytes are a u64 length and the bytes.
#include <cstring>

#include "core/error.hpp"
#include "sync/synchronizer.hpp"

namespace gw::sync {
namespace {

constexpr uint32_t kMagic = 0x59535747u;  // "GWSY"
constexpr uint32_t kVersion = 1;

uint64_t fnv1a64(const unsigned char* p, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void raw(const void* p, uint64_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void bytes(const void* p, uint64_t n) {
    u64(n);
    raw(p, n);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void floats(const std::vector<float>& v) { raw(v.data(), 4 * v.size()); }
  std::vector<unsigned char> finish() {
    u64(fnv1a64(out_.data(), out_.size()));
    return std::move(out_);
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  std::vector<unsigned char> out_;
};

[[noreturn]] void corrupt(const std::string& what) {
  fail(GW_ERR_CORRUPT, "synchronizer state blob is invalid: " + what +
                           "; pass the bytes gw_sync_save_state wrote, unmodified");
}

class Reader {
 public:
  Reader(const unsigned char* p, uint64_t n) : p_(p), end_(p + n) {}
  uint64_t get(int n) {
    need(uint64_t(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(*p_++) << (8 * i);
    return v;
  }
  uint8_t u8() { return uint8_t(get(1)); }
  uint32_t u32() { return uint32_t(get(4)); }
  uint64_t u64() { return get(8); }
  std::vector<unsigned char> bytes() {
    const uint64_t n = u64();
    need(n);
    std::vector<unsigned char> v(p_, p_ + n);
    p_ += n;
    return v;
  }
  std::string str() {
    const auto v = bytes();
    return std::string(v.begin(), v.end());
  }
  std::vector<float> floats(uint64_t count) {
    if (count > uint64_t(end_ - p_) / 4) corrupt("it is cut off");
    std::vector<float> v(count);
    if (count > 0) std::memcpy(v.data(), p_, 4 * count);  // an empty vector has no data pointer
    p_ += 4 * count;
    return v;
  }
  bool at_end() const { return p_ == end_; }

 private:
  void need(uint64_t n) const {
    if (n > uint64_t(end_ - p_)) corrupt("it is cut off");
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace

std::vector<unsigned char> Synchronizer::save_state() {
  require_finalized("gw_sync_save_state");
  for (const Bucket& b : buckets_)
    if (b.early)
      fail(GW_ERR_STATE, "gw_sync_save_state during a step (after gw_sync_bucket_ready); save between steps");
  // Background exchanges in flight belong to the checkpoint: finish them (they are applied later).
  for (auto& [slot, exchanges] : slots_)
    for (uint32_t b = 0; b < exchanges.size(); ++b) finish(b, *exchanges[b]);
  Writer w;
  w.u32(kMagic);
  w.u32(kVersion);
  w.u64(steps_);
  w.u64(micro_steps_);
  w.str(schedule_->name());
  const auto schedule_state = schedule_->save();
  w.bytes(schedule_state.data(), schedule_state.size());
  w.u32(uint32_t(buckets_.size()));
  for (const Bucket& b : buckets_) {
    w.str(b.codec_name);
    w.u32(uint32_t(b.tensors.size()));
    for (uint32_t i : b.tensors) {
      w.str(tensors_[i].name);
      w.u64(tensors_[i].gradient.count);
    }
    w.u64(b.exchanges);
    w.u8(b.accumulator.empty() ? 0 : 1);
    if (!b.accumulator.empty()) w.floats(b.accumulator);
    if (b.ef) {
      std::vector<unsigned char> ef(b.ef->state_size());
      b.ef->save(ef.data(), ef.size());
      w.bytes(ef.data(), ef.size());
    } else {
      w.u64(0);
    }
  }
  w.u32(uint32_t(slots_.size()));
  for (const auto& [slot, exchanges] : slots_) {
    w.u64(slot);
    for (const auto& e : exchanges) w.floats(e->data);
  }
  return w.finish();
}

void Synchronizer::load_state(const unsigned char* data, uint64_t size) {
  require_finalized("gw_sync_load_state");
  if (size > 0) require(data, "buf");
  if (size < 16) corrupt(std::to_string(size) + " bytes is shorter than its header");
  Reader head(data, size);
  if (head.u32() != kMagic) corrupt("it does not start with 'GWSY'");
  const uint32_t version = head.u32();
  if (version != kVersion)
    fail(GW_ERR_VERSION, "synchronizer state blob has version " + std::to_string(version) + "; this gradwire reads " +
                             std::to_string(kVersion));
  Reader checksum(data + size - 8, 8);
  if (checksum.u64() != fnv1a64(data, size - 8)) corrupt("its checksum does not match");
  for (const Bucket& b : buckets_)
    if (b.early)
      fail(GW_ERR_STATE, "gw_sync_load_state during a step (after gw_sync_bucket_ready); load between steps");

  Reader r(data + 8, size - 16);
  const uint64_t steps = r.u64(), micro = r.u64();
  const std::string schedule = r.str();
  if (schedule != schedule_->name())
    fail(GW_ERR_MISMATCH, "the checkpoint was taken with schedule '" + schedule + "', this run uses '" +
                              schedule_->name() + "'");
  const auto schedule_state = r.bytes();
  const uint32_t buckets = r.u32();
  if (buckets != buckets_.size())
    fail(GW_ERR_MISMATCH, "the checkpoint has " + std::to_string(buckets) + " buckets, this run " +
                              std::to_string(buckets_.size()) + " (other tensors, [bucket] bytes or [[rules]])");
  struct Loaded {
    uint64_t exchanges = 0;
    std::vector<float> accumulator;
    std::unique_ptr<ErrorFeedback> ef;
  };
  std::vector<Loaded> loaded(buckets);
  for (uint32_t bi = 0; bi < buckets; ++bi) {
    const Bucket& b = buckets_[bi];
    const std::string where = "bucket " + std::to_string(bi);
    const std::string codec = r.str();
    if (codec != b.codec_name)
      fail(GW_ERR_MISMATCH, where + " was compressed with '" + codec + "' in the checkpoint, '" + b.codec_name +
                                "' now");
    const uint32_t tensors = r.u32();
    for (uint32_t k = 0; k < tensors; ++k) {
      const std::string name = r.str();
      const uint64_t count = r.u64();
      const TensorEntry* now = k < b.tensors.size() ? &tensors_[b.tensors[k]] : nullptr;
      if (now == nullptr || now->name != name || now->gradient.count != count)
        fail(GW_ERR_MISMATCH, where + ": the checkpoint holds tensor '" + name + "' (" + std::to_string(count) +
                                  " elements) where this run has " +
                                  (now ? "'" + now->name + "' (" + std::to_string(now->gradient.count) + " elements)"
                                       : std::string("no tensor")) +
                                  "; the tensor layout changed");
    }
    if (tensors != b.tensors.size())
      fail(GW_ERR_MISMATCH, where + " holds " + std::to_string(tensors) + " tensors in the checkpoint, " +
                                std::to_string(b.tensors.size()) + " now; the tensor layout changed");
    Loaded& l = loaded[bi];
    l.exchanges = r.u64();
    if (r.u8()) l.accumulator = r.floats(b.count);
    const auto ef = r.bytes();
    if (!ef.empty() && !b.ef)
      fail(GW_ERR_MISMATCH, where + ": the checkpoint has error-feedback residuals but [codec] error_feedback is off");
    if (b.ef) {
      l.ef = std::make_unique<ErrorFeedback>(*b.codec);
      if (!ef.empty()) l.ef->load(ef.data(), ef.size());
    }
  }
  std::map<uint64_t, std::vector<std::vector<float>>> slots;
  const uint32_t num_slots = r.u32();
  for (uint32_t s = 0; s < num_slots; ++s) {
    const uint64_t slot = r.u64();
    auto& results = slots[slot];
    for (const Bucket& b : buckets_) results.push_back(r.floats(b.count));
  }
  if (!r.at_end()) corrupt("bytes follow the last section");

  // Everything checked: apply. Exchanges of this run still in flight are completed first.
  schedule_->load(schedule_state.data(), schedule_state.size());
  for (auto& [slot, exchanges] : slots_)
    for (uint32_t b = 0; b < exchanges.size(); ++b) finish(b, *exchanges[b]);
  slots_.clear();
  steps_ = steps;
  micro_steps_ = micro;
  for (uint32_t bi = 0; bi < buckets; ++bi) {
    Bucket& b = buckets_[bi];
    b.exchanges = loaded[bi].exchanges;
    b.accumulator = std::move(loaded[bi].accumulator);
    if (b.ef) b.ef->restore(loaded[bi].ef->residuals());
  }
  for (auto& [slot, results] : slots) {
    auto& exchanges = slots_[slot];
    for (auto& average : results) {
      auto e = std::make_unique<Exchange>();
      e->data = std::move(average);
      exchanges.push_back(std::move(e));
    }
  }
}

}  // namespace gw::sync
