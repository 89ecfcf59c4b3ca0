// White-box: the compressed allreduce of a tensor whose codecs encode outside host memory (device
// memory) stages every payload through scratch of its own and reaches the tensor only through its
// TensorMemory (collectives/compressed.hpp). On the CPU that path runs with host memory whose payloads
// are staged like device payloads: every algorithm and codec must give the same bits as the direct
// path, on every rank, with and without error feedback. The ranks are threads over an in-memory point-to-point; the processes-over-UCX
// tests cover the transport, this covers the staging (tests/gpu/check.sh runs it on a device).
#include <gtest/gtest.h>

#include <gradwire/gradwire.h>

#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "codec/codec.hpp"
#include "collectives/compressed.hpp"
#include "core/error.hpp"
#include "group/collective.hpp"
#include "group/p2p.hpp"

namespace {

using gw::comm::PointToPoint;

// Messages between the ranks of one process: a send is copied into the mailbox at once (and done), a
// receive takes the oldest message of its (source, tag) when it is there.
struct Fabric {
  std::mutex mutex;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, std::deque<std::vector<unsigned char>>> mail;
};

class MemoryP2P final : public PointToPoint {
 public:
  MemoryP2P(Fabric& f, uint32_t rank, uint32_t size) : fabric_(f), rank_(rank), size_(size) {}
  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  Op* send(uint32_t peer, uint64_t tag, const void* data, uint64_t bytes) override {
    std::lock_guard lock(fabric_.mutex);
    const auto* p = static_cast<const unsigned char*>(data);
    fabric_.mail[{rank_, peer, tag}].emplace_back(p, p + bytes);
    return reinterpret_cast<Op*>(new Pending{true, 0, 0, nullptr, 0});
  }
  Op* recv(uint32_t peer, uint64_t tag, void* data, uint64_t bytes) override {
    return reinterpret_cast<Op*>(new Pending{false, peer, tag, data, bytes});
  }
  bool test(Op* op, uint64_t* bytes) override {
    auto* p = reinterpret_cast<Pending*>(op);
    if (p->send) return true;
    std::lock_guard lock(fabric_.mutex);
    auto it = fabric_.mail.find({p->peer, rank_, p->tag});
    if (it == fabric_.mail.end() || it->second.empty()) return false;
    std::vector<unsigned char>& m = it->second.front();
    if (m.size() > p->capacity) gw::fail(GW_ERR_TRANSPORT, "truncated");
    std::memcpy(p->data, m.data(), m.size());
    if (bytes) *bytes = m.size();
    it->second.pop_front();
    return true;
  }
  void free(Op* op) noexcept override { delete reinterpret_cast<Pending*>(op); }
  void progress() override {}
  void abort() noexcept override {}

 private:
  struct Pending {
    bool send;
    uint32_t peer;
    uint64_t tag;
    void* data;
    uint64_t capacity;
  };
  Fabric& fabric_;
  uint32_t rank_, size_;
};

// Host memory whose payloads are staged as device payloads are: encoded into scratch, then copied out.
class StagedHostMemory final : public gw::coll::HostMemory {
 public:
  bool direct_payloads() const override { return false; }
  void* payload_scratch(uint64_t bytes) override {
    ++staged;
    staging_.assign(bytes, 0xA5);  // stale bytes would show as wrong results, not pass unnoticed
    return staging_.data();
  }
  uint64_t staged = 0;

 private:
  std::vector<unsigned char> staging_;
};

struct Runtime {
  gw_runtime* rt = nullptr;
  Runtime() {
    const char* dirs[] = {GW_PLUGIN_DIR};
    gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
    o.plugin_paths = dirs;
    o.num_plugin_paths = 1;
    o.config_text = "[codec.topk]\nratio = 0.01\n[codec.randomk]\nratio = 0.01\n";
    o.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    EXPECT_EQ(gw_runtime_create(&o, &rt), GW_OK) << gw_last_error();
  }
  ~Runtime() { gw_runtime_destroy(rt); }
};

float value(uint32_t rank, uint64_t i) { return float(int((i * 37 + rank * 101) % 211) - 105) / 13.0f; }

// Every rank's results of `steps` compressed allreduces (concatenated), `staged` or direct, ranks as
// threads; with `feedback`, through one error feedback per rank that carries its residuals across steps.
std::vector<std::vector<float>> run(gw_runtime* rt, const std::string& codec_name, uint32_t n, uint64_t count,
                                    gw_reduce_op op, bool staged, bool out_of_place, uint64_t* staged_payloads,
                                    bool feedback = false, uint32_t steps = 1) {
  Fabric fabric;
  std::vector<std::vector<float>> out(n, std::vector<float>(count * steps));
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        gw_codec* codec = nullptr;
        if (gw_codec_create(rt, codec_name.c_str(), &codec) != GW_OK) gw::fail(GW_ERR_INTERNAL, gw_last_error());
        gw::ErrorFeedback ef(*codec->impl);
        MemoryP2P p2p(fabric, r, n);
        auto memory = std::make_shared<StagedHostMemory>();
        for (uint32_t step = 0; step < steps; ++step) {
          std::vector<float> in(count);
          for (uint64_t i = 0; i < count; ++i) in[i] = value(r + 7 * step, i);
          float* result = out[r].data() + step * count;
          if (!out_of_place) std::memcpy(result, in.data(), 4 * count);
          gw::coll::CompressedArgs a;
          a.codec = codec->impl.get();
          a.ef = feedback ? &ef : nullptr;
          a.ctx.seed = 7;
          a.ctx.step = step;
          a.buf = result;
          a.in = out_of_place ? in.data() : nullptr;
          a.count = count;
          a.op = op;
          a.chunk_elements = 1 << 14;  // several pieces per block: the pipelining's paths too
          if (staged) a.memory = memory;
          gw::comm::Signature s{gw::comm::CollectiveKind::Allreduce, op, GW_DTYPE_F32, count, 0, a.codec->id()};
          gw::comm::Collective c(p2p, 1 + step, s, 60.0);
          c.start(gw::coll::allreduce_compressed(c, a));
          while (!c.poll()) std::this_thread::yield();
        }
        if (r == 0 && staged_payloads) *staged_payloads = memory->staged;
        gw_codec_destroy(codec);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (uint32_t r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  return out;
}

class StagedPayloads : public ::testing::TestWithParam<const char*> {};

TEST_P(StagedPayloads, GiveTheDirectPathsBitsOnEveryRank) {
  Runtime rt;
  const std::string codec = GetParam();
  // The counts: one piece per block and several, and a few elements per rank. "none" takes the dense
  // ring directly and the summable ring when staged: the two must add alike at every size.
  for (const uint64_t count : {uint64_t(100003), uint64_t(1009), uint64_t(5)}) {
    for (uint32_t n : {1u, 3u, 4u}) {
      for (bool out_of_place : {false, true}) {
        uint64_t staged_payloads = 0;
        const auto direct = run(rt.rt, codec, n, count, GW_REDUCE_AVG, false, out_of_place, nullptr);
        const auto staged = run(rt.rt, codec, n, count, GW_REDUCE_AVG, true, out_of_place, &staged_payloads);
        EXPECT_GT(staged_payloads, 0u) << codec << ": the staged path staged nothing";
        for (uint32_t r = 0; r < n; ++r) {
          EXPECT_EQ(std::memcmp(direct[r].data(), staged[r].data(), 4 * count), 0)
              << codec << ", " << count << " elements, " << n << " ranks, rank " << r
              << (out_of_place ? ", out of place" : "");
          EXPECT_EQ(std::memcmp(staged[0].data(), staged[r].data(), 4 * count), 0)
              << codec << ": rank " << r << " differs";
        }
        // The average is an average: for n > 1 it differs from rank 0's own input somewhere.
        if (n > 1) {
          bool moved = false;
          for (uint64_t i = 0; i < count && !moved; ++i) moved = staged[0][i] != value(0, i);
          EXPECT_TRUE(moved) << codec << ": the result is rank 0's input";
        }
      }
    }
  }
}

// The none codec's payloads are its values: in host memory it takes the dense ring (no copies); staged
// (as a device tensor is) or with fewer elements than ranks it keeps the summable ring; fp16, whose
// payloads are half the size, always takes the summable ring.
TEST(StagedPayloads, OnlyACodecWhosePayloadsAreItsValuesSkipsItsCopies) {
  Runtime rt;
  gw_codec* none = nullptr;
  gw_codec* fp16 = nullptr;
  ASSERT_EQ(gw_codec_create(rt.rt, "none", &none), GW_OK);
  ASSERT_EQ(gw_codec_create(rt.rt, "fp16", &fp16), GW_OK);
  using gw::coll::CompressedAlgorithm;
  EXPECT_TRUE(gw::coll::payloads_are_values(*none->impl));
  EXPECT_FALSE(gw::coll::payloads_are_values(*fp16->impl));
  EXPECT_EQ(gw::coll::choose_compressed(*none->impl, 1000, 4, 256), CompressedAlgorithm::Dense);
  EXPECT_EQ(gw::coll::choose_compressed(*none->impl, 1000, 4, 256, false), CompressedAlgorithm::SummableRing);
  EXPECT_EQ(gw::coll::choose_compressed(*none->impl, 3, 4, 256), CompressedAlgorithm::SummableRing);
  EXPECT_EQ(gw::coll::choose_compressed(*none->impl, 1000, 1, 256), CompressedAlgorithm::Local);
  EXPECT_EQ(gw::coll::choose_compressed(*fp16->impl, 1000, 4, 256), CompressedAlgorithm::SummableRing);
  gw_codec_destroy(none);
  gw_codec_destroy(fp16);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, StagedPayloads,
                         ::testing::Values("none", "fp16", "bf16", "int8", "onebit", "topk", "randomk"),
                         [](const auto& p) { return std::string(p.param); });

// Error feedback around the staged encodings: its residuals, carried over three steps, give the direct
// path's bits at every step (on a device they live on the device: tests/gpu/device_rank).
TEST(StagedPayloads, WithErrorFeedbackGiveTheDirectPathsBitsStepAfterStep) {
  Runtime rt;
  // none: the host path takes the dense ring and leaves its (zero) residuals alone, the staged one
  // encodes through them; both give the same bits.
  for (const char* codec : {"int8", "onebit", "topk", "none"}) {
    const uint64_t count = 30011;
    const auto direct = run(rt.rt, codec, 3, count, GW_REDUCE_AVG, false, false, nullptr, true, 3);
    const auto staged = run(rt.rt, codec, 3, count, GW_REDUCE_AVG, true, false, nullptr, true, 3);
    const auto plain = run(rt.rt, codec, 3, count, GW_REDUCE_AVG, true, false, nullptr, false, 3);
    for (uint32_t r = 0; r < 3; ++r)
      EXPECT_EQ(std::memcmp(direct[r].data(), staged[r].data(), 4 * 3 * count), 0) << codec << ", rank " << r;
    // The residuals did something (a lossy codec): from the second step on, the results differ from no
    // feedback's; a lossless one has none, so its results are no feedback's.
    if (std::string(codec) != "none")
      EXPECT_NE(std::memcmp(staged[0].data() + count, plain[0].data() + count, 4 * 2 * count), 0) << codec;
    else
      EXPECT_EQ(std::memcmp(direct[0].data(), plain[0].data(), 4 * 3 * count), 0) << codec;
  }
}

}  // namespace
