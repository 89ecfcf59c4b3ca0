// What gw_comm_create hands a transport in gw_transport_init: the launcher's local rank and local size
// (docs/transport-guide.md). The probe transport (test_plugins/local_size_probe.c) refuses in create with
// a message naming what it received, so gw_comm_create returns before any rendezvous: one process.
#include <cstdlib>
#include <string>

#include "gw_test.hpp"

namespace {

std::string what_the_transport_got(const char* local_size) {
  setenv("GW_RANK", "1", 1);
  setenv("GW_WORLD_SIZE", "4", 1);
  setenv("GW_LOCAL_RANK", "1", 1);
  if (local_size != nullptr) {
    setenv("GW_LOCAL_SIZE", local_size, 1);
  } else {
    unsetenv("GW_LOCAL_SIZE");
  }
  gwtest::Runtime rt("[transport]\ninter = \"local_size_probe\"\n", {GW_TEST_PROBE_DIR});
  gw_comm_options o = GW_COMM_OPTIONS_INIT;
  gw_comm* comm = nullptr;
  const gw_status s = gw_comm_create(rt.rt, &o, &comm);
  const std::string error = gw_last_error();
  for (const char* name : {"GW_RANK", "GW_WORLD_SIZE", "GW_LOCAL_RANK", "GW_LOCAL_SIZE"}) unsetenv(name);
  EXPECT_EQ(s, GW_ERR_UNSUPPORTED) << error;
  return error;
}

}  // namespace

TEST(TransportInit, LocalSizeIsTheLaunchersRankCountOnThisHost) {
  const std::string error = what_the_transport_got("2");
  EXPECT_NE(error.find("local_rank=1 local_size=2 world_size=4"), std::string::npos) << error;
}

TEST(TransportInit, LocalSizeIsOneWhenTheLauncherDoesNotSay) {
  const std::string error = what_the_transport_got(nullptr);
  EXPECT_NE(error.find("local_rank=1 local_size=1 world_size=4"), std::string::npos) << error;
}
