// Who this process is, from the launcher's variables (runtime/bootstrap/launch_env.cpp): the local size
// that transports receive in gw_transport_init.local_size.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/launch_env.hpp"
#include "core/error.hpp"

namespace {

// Sets the given variables (and clears every other launcher variable) for one test.
class LaunchEnv {
 public:
  explicit LaunchEnv(std::vector<std::pair<const char*, const char*>> vars) {
    for (const char* name : kAll) unsetenv(name);
    for (const auto& [name, value] : vars) setenv(name, value, 1);
  }
  ~LaunchEnv() {
    for (const char* name : kAll) unsetenv(name);
  }

 private:
  static constexpr const char* kAll[] = {
      "GW_RANK", "GW_WORLD_SIZE", "GW_LOCAL_RANK", "GW_LOCAL_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK",
      "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "GW_ROOT_ADDR",
      "GW_ROOT_PORT", "MASTER_ADDR", "MASTER_PORT"};
};

}  // namespace

TEST(LaunchEnv, LocalSizeFromEachLauncher) {
  {
    LaunchEnv env({{"GW_RANK", "3"}, {"GW_WORLD_SIZE", "8"}, {"GW_LOCAL_RANK", "1"}, {"GW_LOCAL_SIZE", "4"}});
    const auto info = gw::bootstrap::detect_launch({});
    EXPECT_EQ(info.local_rank, 1u);
    EXPECT_EQ(info.local_size, 4u);
  }
  {
    LaunchEnv env({{"RANK", "5"}, {"WORLD_SIZE", "6"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "3"}});
    EXPECT_EQ(gw::bootstrap::detect_launch({}).local_size, 3u);
  }
  {
    LaunchEnv env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    EXPECT_EQ(gw::bootstrap::detect_launch({}).local_size, 2u);
  }
}

TEST(LaunchEnv, LocalSizeIsOneWhenTheLauncherDoesNotSay) {
  {
    LaunchEnv env({});
    EXPECT_EQ(gw::bootstrap::detect_launch({}).local_size, 1u);
  }
  {
    LaunchEnv env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"}});
    EXPECT_EQ(gw::bootstrap::detect_launch({}).local_size, 1u);
  }
  {  // the application sized the communicator itself, smaller than the launcher's node
    LaunchEnv env({{"GW_RANK", "0"}, {"GW_WORLD_SIZE", "4"}, {"GW_LOCAL_SIZE", "4"}});
    gw::bootstrap::LaunchOverrides o;
    o.rank = 0;
    o.world_size = 2;
    EXPECT_EQ(gw::bootstrap::detect_launch(o).local_size, 1u);
  }
}

TEST(LaunchEnv, MalformedLocalSizeNamesTheVariable) {
  for (const char* bad : {"0", "9", "two"}) {
    LaunchEnv env({{"GW_RANK", "0"}, {"GW_WORLD_SIZE", "8"}, {"GW_LOCAL_SIZE", bad}});
    try {
      gw::bootstrap::detect_launch({});
      ADD_FAILURE() << "GW_LOCAL_SIZE=" << bad << " was accepted";
    } catch (const gw::Error& e) {
      EXPECT_EQ(e.status(), GW_ERR_CONFIG);
      EXPECT_NE(std::string(e.what()).find("GW_LOCAL_SIZE='" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}
