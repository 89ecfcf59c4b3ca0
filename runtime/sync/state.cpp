// The synchronizer's checkpoint blob (little-endian; docs/sync.md):
//   "GWSY" u32 magic, u32 version,
//   u64 steps, u64 micro-steps, str schedule name, bytes schedule state,
//   u32 buckets, then per bucket: str codec, u32 tensors (str name, u64 count each), u64 exchanges,
//     u8 has accumulator [f32 × count], bytes error-feedback state (empty: none),
//     (version 2:) u8 has velocity [f32 × count], u8 has anchor [f32 × count],
//     bytes parameter error-feedback state (empty: none),
//     (version 4:) u8 has outer velocity [f32 × count],
//   u32 background slots, then per slot: u64 slot, per bucket f32 × count (the finished average),
//   (version 3:) u32 codecs with state, then per codec: str name, bytes its gw_codec_save_state blob,
//   (version 4:) u32 outer steps in flight, then per one: u32 fragment, u64 step started, u32 buckets,
//     per bucket: u32 bucket, u8 first, f32 × count (the finished average), f32 × count (parameters sent),
//   u64 FNV-1a 64 of every preceding byte.
// str and bytes are a u64 length and the bytes.
#include <algorithm>
#include <cstring>

#include "core/bytes.hpp"
#include "core/error.hpp"
#include "sync/synchronizer.hpp"

namespace gw::sync {
namespace {

constexpr uint32_t kMagic = 0x59535747u;  // "GWSY"
constexpr uint32_t kVersion = 4;  // 1: without velocity, anchor and parameter error feedback; 2: without codec states; 3: without the outer loop

[[noreturn]] void corrupt(const std::string& what) {
  fail(GW_ERR_CORRUPT, "synchronizer state blob is invalid: " + what +
                           "; pass the bytes gw_sync_save_state wrote, unmodified");
}

bytes::ByteReader reader(const unsigned char* p, uint64_t n) {
  return bytes::ByteReader(p, n, "synchronizer state blob", "pass the bytes gw_sync_save_state wrote, unmodified");
}

}  // namespace

std::vector<unsigned char> Synchronizer::save_state() {
  require_finalized("gw_sync_save_state");
  for (const Bucket& b : buckets_)
    if (b.early)
      fail(GW_ERR_STATE, "gw_sync_save_state during a step (after gw_sync_bucket_ready); save between steps");
  // Background exchanges in flight belong to the checkpoint: finish them (they are applied later).
  for (auto& [slot, exchanges] : slots_)
    for (uint32_t b = 0; b < exchanges.size(); ++b) finish(b, *exchanges[b]);
  for (auto& [fragment, flight] : outer_)
    for (size_t k = 0; k < flight.buckets.size(); ++k) finish(flight.buckets[k], *flight.exchanges[k]);
  bytes::ByteWriter w;
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
    if (!b.accumulator.empty()) w.f32s(b.accumulator.data(), b.accumulator.size());
    const auto save_ef = [&](const ErrorFeedback* ef) {
      std::vector<unsigned char> state(ef ? ef->state_size() : 0);
      if (ef) ef->save(state.data(), state.size());
      w.bytes(state.data(), state.size());
    };
    const auto save_floats = [&](const std::vector<float>& v) {
      w.u8(v.empty() ? 0 : 1);
      if (!v.empty()) w.f32s(v.data(), v.size());
    };
    save_ef(b.ef.get());
    save_floats(b.velocity);
    save_floats(b.anchor);
    save_ef(b.parameter_ef.get());
    save_floats(b.outer_velocity);
  }
  w.u32(uint32_t(slots_.size()));
  for (const auto& [slot, exchanges] : slots_) {
    w.u64(slot);
    for (uint32_t b = 0; b < exchanges.size(); ++b) {
      Exchange& e = *exchanges[b];
      if (e.device_data) {  // a device exchange: its average fetched (it is still applied from the device)
        e.data.resize(buckets_[b].count);
        device::use_device(buckets_[b].device_index);
        device::copy_to_host(e.data.data(), e.device_data->data(), 4 * e.data.size(), buckets_[b].stream);
      }
      w.f32s(e.data.data(), e.data.size());
    }
  }
  // Codecs that keep state between calls (powersgd's warm starts and residuals, per bucket).
  std::vector<std::pair<std::string, std::vector<unsigned char>>> states;
  for (auto& [name, codec] : codecs_)
    if (codec->has_state()) states.emplace_back(name, codec->save_state());
  w.u32(uint32_t(states.size()));
  for (const auto& [name, blob] : states) {
    w.str(name);
    w.bytes(blob.data(), blob.size());
  }
  w.u32(uint32_t(outer_.size()));
  for (const auto& [fragment, flight] : outer_) {
    w.u32(fragment);
    w.u64(flight.step);
    w.u32(uint32_t(flight.buckets.size()));
    for (size_t k = 0; k < flight.buckets.size(); ++k) {
      w.u32(flight.buckets[k]);
      w.u8(flight.first[k]);
      w.f32s(flight.exchanges[k]->data.data(), flight.exchanges[k]->data.size());
      w.f32s(flight.sent[k].data(), flight.sent[k].size());
    }
  }
  return w.finish_with_checksum();
}

void Synchronizer::load_state(const unsigned char* data, uint64_t size) {
  require_finalized("gw_sync_load_state");
  if (size > 0) require(data, "buf");
  if (size < 16) corrupt(std::to_string(size) + " bytes is shorter than its header");
  auto head = reader(data, size);
  if (head.u32() != kMagic) corrupt("it does not start with 'GWSY'");
  const uint32_t version = head.u32();
  if (version < 1 || version > kVersion)
    fail(GW_ERR_VERSION, "synchronizer state blob has version " + std::to_string(version) + "; this gradwire reads 1 to " +
                             std::to_string(kVersion));
  if (bytes::get_le(data + size - 8, 8) != bytes::fnv1a64(data, size - 8)) corrupt("its checksum does not match");
  for (const Bucket& b : buckets_)
    if (b.early)
      fail(GW_ERR_STATE, "gw_sync_load_state during a step (after gw_sync_bucket_ready); load between steps");

  auto r = reader(data + 8, size - 16);
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
    std::vector<float> velocity, anchor, outer_velocity;
    std::unique_ptr<ErrorFeedback> parameter_ef;
    std::string adopt_codec;  // an auto bucket takes the checkpoint's choice
  };
  const std::vector<std::string> allowed = runtime_.config().get_strings("codec", "allow");
  std::vector<Loaded> loaded(buckets);
  for (uint32_t bi = 0; bi < buckets; ++bi) {
    const Bucket& b = buckets_[bi];
    const std::string where = "bucket " + std::to_string(bi);
    const std::string codec = r.str();
    Loaded& l = loaded[bi];
    Codec* codec_ptr = b.codec;
    if (codec != b.codec_name) {
      // An auto bucket resumes with the codec the run had chosen by then (its residuals belong to it).
      if (!b.is_auto || (codec != "none" && std::find(allowed.begin(), allowed.end(), codec) == allowed.end()))
        fail(GW_ERR_MISMATCH, where + " was compressed with '" + codec + "' in the checkpoint, '" + b.codec_name +
                                  "' now" + (b.is_auto ? " ([codec] allow does not list it)" : ""));
      codec_ptr = codec_named(codec);
      l.adopt_codec = codec;
    }
    const bool has_ef = keeps_error_feedback(runtime_.config(), codec_ptr);
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
    l.exchanges = r.u64();
    if (r.u8()) l.accumulator = r.f32s(b.count);
    const auto ef = r.bytes();
    if (!ef.empty() && !has_ef)
      fail(GW_ERR_MISMATCH, where + ": the checkpoint has error-feedback residuals but this run keeps none for '" +
                                codec + "' ([codec] error_feedback, error_feedback_codecs)");
    if (has_ef) {
      l.ef = std::make_unique<ErrorFeedback>(*codec_ptr);
      if (!ef.empty()) l.ef->load(ef.data(), ef.size());
    }
    if (version >= 2) {
      if (r.u8()) l.velocity = r.f32s(b.count);
      if (r.u8()) l.anchor = r.f32s(b.count);
      const auto pef = r.bytes();
      if (!pef.empty() && !has_ef)
        fail(GW_ERR_MISMATCH, where + ": the checkpoint has parameter error-feedback residuals but this run keeps "
                                      "none for '" + codec + "' ([codec] error_feedback, error_feedback_codecs)");
      if (has_ef) {
        l.parameter_ef = std::make_unique<ErrorFeedback>(*codec_ptr);
        if (!pef.empty()) l.parameter_ef->load(pef.data(), pef.size());
      }
      if (!l.velocity.empty() && !(momentum_ > 0))
        fail(GW_ERR_MISMATCH, where + ": the checkpoint was taken with [codec] momentum > 0, this run has 0");
    }
    if (version >= 4 && r.u8()) l.outer_velocity = r.f32s(b.count);
  }
  std::map<uint64_t, std::vector<std::vector<float>>> slots;
  const uint32_t num_slots = r.u32();
  for (uint32_t s = 0; s < num_slots; ++s) {
    const uint64_t slot = r.u64();
    auto& results = slots[slot];
    for (const Bucket& b : buckets_) results.push_back(r.f32s(b.count));
  }
  std::vector<std::pair<std::string, std::vector<unsigned char>>> codec_states;
  if (version >= 3) {
    const uint32_t n = r.u32();
    for (uint32_t i = 0; i < n; ++i) {
      std::string name = r.str();
      codec_states.emplace_back(std::move(name), r.bytes());
    }
  }
  std::map<uint32_t, OuterFlight> outer;
  if (version >= 4) {
    const uint32_t num_outer = r.u32();
    for (uint32_t k = 0; k < num_outer; ++k) {
      const uint32_t fragment = r.u32();
      OuterFlight f;
      f.step = r.u64();
      const uint32_t n = r.u32();
      if (n > buckets) corrupt("an outer step in flight has more buckets than the run");
      for (uint32_t j = 0; j < n; ++j) {
        const uint32_t bucket = r.u32();
        if (bucket >= buckets) corrupt("an outer step in flight names bucket " + std::to_string(bucket));
        f.buckets.push_back(bucket);
        f.first.push_back(r.u8() ? 1 : 0);
        auto e = std::make_unique<Exchange>();
        e->data = r.f32s(buckets_[bucket].count);
        f.exchanges.push_back(std::move(e));
        f.sent.push_back(r.f32s(buckets_[bucket].count));
      }
      outer[fragment] = std::move(f);
    }
  }
  if (!r.at_end()) corrupt("bytes follow the last section");
  for (const auto& [name, blob] : codec_states) {
    bool used = false;
    for (const Bucket& b : buckets_) used = used || b.codec_name == name;
    for (const Loaded& l : loaded) used = used || l.adopt_codec == name;
    if (!used)
      fail(GW_ERR_MISMATCH, "the checkpoint holds the state of codec '" + name + "', which no bucket of this run uses");
  }

  // The codecs' states load first: a damaged one leaves the synchronizer as it was (a codec's own load is
  // all or nothing).
  for (const auto& [name, blob] : codec_states) codec_named(name)->load_state(blob.data(), blob.size());
  // Everything checked: apply. Exchanges of this run still in flight are completed first.
  schedule_->load(schedule_state.data(), schedule_state.size());
  for (auto& [slot, exchanges] : slots_)
    for (uint32_t b = 0; b < exchanges.size(); ++b) finish(b, *exchanges[b]);
  slots_.clear();
  for (auto& [fragment, flight] : outer_)
    for (size_t k = 0; k < flight.buckets.size(); ++k) finish(flight.buckets[k], *flight.exchanges[k]);
  outer_ = std::move(outer);
  steps_ = steps;
  micro_steps_ = micro;
  for (uint32_t bi = 0; bi < buckets; ++bi) {
    Bucket& b = buckets_[bi];
    if (!loaded[bi].adopt_codec.empty()) {
      set_codec(b, loaded[bi].adopt_codec);
      b.codec_reason = "taken from the checkpoint, where it had been chosen";
      b.recent.clear();
      b.predicted_seconds = b.expected_seconds = 0;  // unknown: the next check chooses again (recheck_auto)
      b.candidates.clear();
    }
    b.exchanges = loaded[bi].exchanges;
    b.accumulator = std::move(loaded[bi].accumulator);
    if (b.ef) b.ef->restore(loaded[bi].ef->residuals());
    b.velocity = std::move(loaded[bi].velocity);
    b.anchor = std::move(loaded[bi].anchor);
    b.outer_velocity = std::move(loaded[bi].outer_velocity);
    if (b.parameter_ef) b.parameter_ef->restore(loaded[bi].parameter_ef ? loaded[bi].parameter_ef->residuals()
                                                                        : ErrorFeedback::Residuals{});
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
