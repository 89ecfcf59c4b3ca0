// The auto codec: on loopback it keeps compression off (or fp16); with a model calibrated for a
// 100 Mbit/s link it picks a strong codec; a codec that does not exist in `allow` is a clear error.
// Every rank must choose alike (auto_rank checks it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "gw_test.hpp"

namespace {

std::string launch(int ranks, const std::string& args) {
  return "MP_TIMEOUT_S=120 " + std::string(GW_CLI) + " run -n " + std::to_string(ranks) + " -- " + GW_AUTO_RANK + " " + args;
}

void expect_ok(int ranks, const std::string& args) {
  const auto r = gwtest::run_command(launch(ranks, args));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank)
    EXPECT_NE(r.output.find("OK rank " + std::to_string(rank)), std::string::npos) << "rank " << rank << ":\n" << r.output;
}

}  // namespace

TEST(AutoCodec, OnLoopbackKeepsCompressionOffOrFp16) { expect_ok(2, "loopback"); }

TEST(AutoCodec, BehindA100MbitLinkPicksAStrongCodec) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gw_auto_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "model.toml").string();
  const auto cal = gwtest::run_command(std::string(GW_CLI) + " calibrate --no-links --inter-rate 100mbit --codecs " +
                                       "none,fp16,int8,topk --bytes 4194304 --repetitions 2 -o " + model);
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  ASSERT_TRUE(std::filesystem::exists(model)) << cal.output;
  expect_ok(2, "model " + model);
  expect_ok(3, "model " + model);
  std::filesystem::remove_all(dir);
}

TEST(AutoCodec, AnUnknownAllowedCodecIsAConfigError) {
  const auto r = gwtest::run_command(launch(2, "bad-allow"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string prefix = "[" + std::to_string(rank) + "] EXPECTED-ERROR GW_ERR_CONFIG";
    const size_t at = r.output.find(prefix);
    ASSERT_NE(at, std::string::npos) << r.output;
    EXPECT_NE(r.output.substr(at, r.output.find('\n', at) - at).find("int9"), std::string::npos) << r.output;
  }
}
