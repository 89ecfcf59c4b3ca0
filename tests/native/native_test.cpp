// The native-collective dispatch over real processes: `gradwire run -n N -- native_rank` with the test
// transport "hostcoll" (native collectives on host memory over UCX point-to-point).
#include <gtest/gtest.h>

#include <string>

#include "gw_test.hpp"

namespace {

int count_of(const std::string& text, const std::string& what) {
  int c = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++c;
  return c;
}

void run_ranks(int n) {
  const auto r = gwtest::run_command(std::string("env UCX_TLS=tcp ") + GW_CLI + " run -n " + std::to_string(n) + " -- " +
                                     NATIVE_RANK + " " + HOSTCOLL_DIR + " " + UCX_LIBRARY);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "OK rank"), n) << r.output;
  EXPECT_EQ(count_of(r.output, "FAIL"), 0) << r.output;
}

TEST(NativeCollectives, TwoRanksUseTheTransportsCollectives) { run_ranks(2); }
TEST(NativeCollectives, ThreeRanksUseTheTransportsCollectives) { run_ranks(3); }

}  // namespace
