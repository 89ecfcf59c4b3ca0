// The auto codec: with a model of this machine's codecs and a fast (100 Gbit/s) link it keeps
// compression off (or fp16); behind a 100 Mbit/s link it picks a strong codec; measured at finalize every
// rank chooses alike; a codec that does not exist in `allow` is a clear error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gw_test.hpp"

namespace {

std::string launch(int ranks, const std::string& args) {
  return gwtest::launch_command(ranks, GW_AUTO_RANK, args, "", 120);
}

void expect_ok(int ranks, const std::string& args) {
  gwtest::expect_every_rank_ok(gwtest::run_command(launch(ranks, args)), ranks);
}

}  // namespace

// A model of this machine's codecs (measured) with a link of `rate` between the ranks.
struct Calibrated {
  std::filesystem::path dir;
  std::string file;
  explicit Calibrated(const std::string& rate)
      : dir(std::filesystem::temp_directory_path() / ("gw_auto_" + std::to_string(getpid()) + "_" + rate)),
        file((dir / "model.toml").string()) {
    std::filesystem::create_directories(dir);
    const auto cal = gwtest::run_command(std::string(GW_CLI) + " calibrate --no-links --inter-rate " + rate +
                                         " --codecs none,fp16,int8,topk --bytes 8388608 --repetitions 2 -o " + file);
    EXPECT_EQ(cal.exit_code, 0) << cal.output;
    EXPECT_TRUE(std::filesystem::exists(file)) << cal.output;
  }
  ~Calibrated() { std::filesystem::remove_all(dir); }
};

// Loopback on a machine whose shared memory moves 12.5 GB/s: compressing costs more than it saves.
TEST(AutoCodec, OnAFastLocalLinkKeepsCompressionOffOrFp16) {
  const Calibrated model("100gbit");
  expect_ok(2, "model " + model.file + " light");
}

TEST(AutoCodec, BehindA100MbitLinkPicksAStrongCodec) {
  const Calibrated model("100mbit");
  expect_ok(2, "model " + model.file + " strong");
  expect_ok(3, "model " + model.file + " strong");
}

// Measured at finalize on this machine (whatever wins here): every rank chooses alike and says why.
TEST(AutoCodec, MeasuredAtFinalizeEveryRankChoosesAlike) {
  expect_ok(2, "measured");
  expect_ok(3, "measured");
}

// A file that claims a 1 Mbit/s link predicts exchanges hundreds of times slower than loopback runs
// them: the check after step 3 chooses again, measuring; with auto_drift = 1e9 nothing changes.
TEST(AutoCodec, ChoosesAgainWhenExchangesDriftFromThePrediction) {
  const Calibrated model("1mbit");
  expect_ok(2, "drift " + model.file);
  expect_ok(2, "steady " + model.file);
}

// A rank that arrives late makes the others wait inside their exchanges; that wait is not the link's.
// The check goes by the rank that waited least (the late one) and keeps the choice.
TEST(AutoCodec, ALateRanksWaitIsNotDrift) { expect_ok(3, "straggler"); }

// A resumed run keeps the codec its checkpoint was taken with, whatever it would choose now.
TEST(AutoCodec, ALoadedCheckpointBringsItsCodec) {
  const Calibrated light("100gbit");
  const Calibrated strong("1mbit");
  expect_ok(2, "adopt " + light.file + " " + strong.file);
}

TEST(AutoCodec, AnUnknownAllowedCodecIsAConfigError) {
  const auto r = gwtest::run_command(launch(2, "bad-allow"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string prefix = "[" + std::to_string(rank) + "] EXPECTED-ERROR GW_ERR_NOT_FOUND";
    const size_t at = r.output.find(prefix);
    ASSERT_NE(at, std::string::npos) << r.output;
    EXPECT_NE(r.output.substr(at, r.output.find('\n', at) - at).find("int9"), std::string::npos) << r.output;
  }
}
