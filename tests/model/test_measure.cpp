// The machine's busy time (runtime/model/measure.hpp), the basis of a link's CPU per byte.

#include <gtest/gtest.h>

#include <set>

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "model/measure.hpp"

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

// A thread that spins for 0.3 s of its own CPU time shows up in full in the machine's busy time (which
// counts every process, so other work on a loaded machine only adds), and no more time can pass busy
// than the CPUs had.
TEST(MeasureBusy, CountsASpinningThreadAndNoMoreThanTheCoresHad) {
  const double before = gw::model::busy_core_seconds();
  ASSERT_GE(before, 0) << "neither cpuidle nor /proc/stat could be read";
  const auto t0 = std::chrono::steady_clock::now();
  double spun = 0;
  std::thread spinner([&] {
    const double c0 = thread_cpu_s();
    volatile unsigned long sink = 0;
    while (thread_cpu_s() - c0 < 0.3) sink = sink + 1;
    spun = thread_cpu_s() - c0;
  });
  spinner.join();
  const double after = gw::model::busy_core_seconds();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cores = double(sysconf(_SC_NPROCESSORS_ONLN));
  const double slack = 0.01 * (cores + 1);  // /proc/stat's 10 ms units, where cpuidle is missing
  EXPECT_GE(after - before, spun - slack) << "the spinner's " << spun << " s of CPU went uncounted";
  EXPECT_LE(after - before, cores * wall + slack) << "more busy time than " << cores << " cores had in " << wall << " s";
}

// Several copies of a codec measured at once: every copy runs every phase of every repetition, the
// phases start together (no copy encodes while another still decodes), and the figures are per byte of
// one copy's buffer.
TEST(MeasureCodec, CopiesAtOnceRunEachPhaseTogether) {
  constexpr int kCopies = 3, kRepetitions = 4;
  constexpr uint64_t kBytes = 1 << 20, kChunk = 256 << 10;  // 4 pieces
  std::atomic<int> encoding{0}, decoding{0};
  std::atomic<bool> overlapped{false};
  std::vector<std::atomic<int>> encodes(kCopies), decodes(kCopies);
  std::vector<gw::model::CodecProbe> probes(kCopies);
  for (int i = 0; i < kCopies; ++i) {
    probes[i].max_payload = [](uint64_t count) { return 4 * count; };
    probes[i].encode = [&, i](uint64_t, const float* x, uint64_t count, void* payload, uint64_t) {
      ++encoding;
      if (decoding > 0) overlapped = true;
      std::memcpy(payload, x, 4 * count);
      ++encodes[i];
      --encoding;
      return 4 * count;
    };
    probes[i].decode = [&, i](uint64_t, const void* payload, uint64_t size, float* out, uint64_t, bool) {
      ++decoding;
      if (encoding > 0) overlapped = true;
      std::memcpy(out, payload, size);
      ++decodes[i];
      --decoding;
    };
  }
  const gw::model::CodecCost c = gw::model::measure_codec("copy", gw::model::CodecKind::Sparse, probes, kBytes,
                                                          kChunk, kRepetitions);
  for (int i = 0; i < kCopies; ++i) {
    EXPECT_EQ(encodes[i], (kRepetitions + 1) * 4) << "copy " << i;  // the warm-up too
    EXPECT_EQ(decodes[i], (kRepetitions + 1) * 4) << "copy " << i;
  }
  EXPECT_FALSE(overlapped) << "a copy encoded while another decoded";
  EXPECT_DOUBLE_EQ(c.ratio, 1.0);
  EXPECT_GT(c.encode, 0);
  EXPECT_GT(c.decode, 0);
}

// The sparse allgather's combining is timed as the algorithm runs it: for each rank count n, every piece's
// n payloads (each encoded from another gradient) decoded into the piece in rank order, the first writing
// it and the others adding; one figure per count.
TEST(MeasureCodec, SparseCombiningDecodesNPayloadsPerPieceTheFirstWriting) {
  constexpr uint64_t kBytes = 1 << 20, kChunk = 256 << 10;  // 4 pieces
  constexpr int kRepetitions = 2;
  std::set<float> sources;  // the first value of every payload encoded: one per gradient and piece
  std::vector<std::pair<float, bool>> decodes;  // each decode's payload (its first value) and accumulate flag
  gw::model::CodecProbe probe;
  probe.max_payload = [](uint64_t) { return 8; };
  probe.encode = [&](uint64_t, const float* x, uint64_t, void* payload, uint64_t) {
    std::memcpy(payload, x, 4);
    sources.insert(x[0]);
    return uint64_t(4);
  };
  probe.decode = [&](uint64_t, const void* payload, uint64_t size, float*, uint64_t, bool accumulate) {
    EXPECT_EQ(size, 4u);
    float v;
    std::memcpy(&v, payload, 4);
    decodes.emplace_back(v, accumulate);
  };
  const std::vector<double> t = gw::model::measure_sparse_combine(probe, {2, 3}, kBytes, kChunk, kRepetitions);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_GT(t[0], 0);
  EXPECT_GT(t[1], 0);
  EXPECT_EQ(sources.size(), 3u * 4);  // 3 gradients of 4 pieces, each a different payload
  ASSERT_EQ(decodes.size(), (kRepetitions + 1) * 4u * (2 + 3));  // the warm-up too
  // Every group of n decodes: the first writes, the others add, each a different gradient's payload.
  size_t i = 0;
  for (int n : {2, 3})
    for (int r = 0; r <= kRepetitions; ++r)
      for (int p = 0; p < 4; ++p) {
        std::set<float> seen;
        for (int q = 0; q < n; ++q, ++i) {
          EXPECT_EQ(decodes[i].second, q != 0) << "n " << n << " piece " << p << " payload " << q;
          seen.insert(decodes[i].first);
        }
        EXPECT_EQ(seen.size(), size_t(n));
      }
}

// A copy whose codec fails makes the measurement fail with its error, without leaving the others waiting.
TEST(MeasureCodec, AFailingCopyFailsTheMeasurement) {
  std::vector<gw::model::CodecProbe> probes(2);
  for (auto& p : probes) {
    p.max_payload = [](uint64_t count) { return 4 * count; };
    p.encode = [](uint64_t, const float*, uint64_t count, void*, uint64_t) { return 4 * count; };
    p.decode = [](uint64_t, const void*, uint64_t, float*, uint64_t, bool) {};
  }
  probes[1].encode = [](uint64_t, const float*, uint64_t, void*, uint64_t) -> uint64_t {
    throw std::runtime_error("encode failed: payload too small");
  };
  try {
    gw::model::measure_codec("broken", gw::model::CodecKind::Sparse, probes, 1 << 20, 256 << 10, 2);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "encode failed: payload too small");
  }
}
