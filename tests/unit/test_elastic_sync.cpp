// Elastic mode's checks of its own input, one rank through the C ABI (docs/elastic.md): a tensor without
// its parameter and a schedule whose exchanges outlive the step are refused with a message saying why;
// without [elastic] enabled nothing changes (epoch 0, plain GW_OK).
#include <gradwire/gradwire.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gw_test.hpp"

namespace {

struct One {
  gwtest::Runtime runtime;
  gw_comm* comm = nullptr;
  gw_sync* sync = nullptr;
  std::vector<float> grad = std::vector<float>(64, 0.5f), param = std::vector<float>(64, 1.0f);
  explicit One(const std::string& toml) : runtime(toml, {GW_PLUGIN_DIR}) {
    gw_comm_options co = GW_COMM_OPTIONS_INIT;
    co.rank = 0;
    co.world_size = 1;
    EXPECT_EQ(gw_comm_create(runtime.rt, &co, &comm), GW_OK) << gw_last_error();
    gw_sync_options so = GW_SYNC_OPTIONS_INIT;
    so.runtime = runtime.rt;
    EXPECT_EQ(gw_sync_create(comm, &so, &sync), GW_OK) << gw_last_error();
  }
  gw_status add(bool with_parameter) {
    gw_tensor g = GW_TENSOR_INIT, p = GW_TENSOR_INIT;
    g.data = grad.data();
    g.count = grad.size();
    p.data = param.data();
    p.count = param.size();
    return gw_sync_register(sync, "w", &g, with_parameter ? &p : nullptr);
  }
  ~One() {
    if (sync) gw_sync_destroy(sync);
    if (comm) gw_comm_destroy(comm);
  }
};

TEST(ElasticSync, StatusHasAName) { EXPECT_STREQ(gw_status_string(GW_MEMBERSHIP_CHANGED), "GW_MEMBERSHIP_CHANGED"); }

TEST(ElasticSync, WithoutElasticModeNothingChanges) {
  One one("");
  ASSERT_EQ(one.add(false), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_sync_finalize(one.sync), GW_OK) << gw_last_error();
  uint32_t flags = 0;
  EXPECT_EQ(gw_sync_step(one.sync, &flags), GW_OK) << gw_last_error();
  EXPECT_EQ(gw_comm_membership_epoch(one.comm), 0u);
}

TEST(ElasticSync, ATensorWithoutItsParameterIsRefused) {
  One one("[elastic]\nenabled = true\n");
  ASSERT_EQ(one.add(false), GW_OK) << gw_last_error();
  EXPECT_EQ(gw_sync_finalize(one.sync), GW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gw_last_error()).find("needs every tensor's parameter"), std::string::npos) << gw_last_error();
}

TEST(ElasticSync, StepsOfOneRankWithParametersAreUnchanged) {
  One one("[elastic]\nenabled = true\n");
  ASSERT_EQ(one.add(true), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_sync_finalize(one.sync), GW_OK) << gw_last_error();
  for (int i = 0; i < 3; ++i) {
    uint32_t flags = 0;
    EXPECT_EQ(gw_sync_step(one.sync, &flags), GW_OK) << gw_last_error();
    EXPECT_TRUE(flags & GW_SYNC_APPLY);
  }
  EXPECT_EQ(gw_comm_membership_epoch(one.comm), 0u);
}

TEST(ElasticSync, BucketReadyIsRefused) {
  One one("[elastic]\nenabled = true\n");
  ASSERT_EQ(one.add(true), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_sync_finalize(one.sync), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_sync_bucket_ready(one.sync, 0), GW_OK) << gw_last_error();
  uint32_t flags = 0;
  EXPECT_EQ(gw_sync_step(one.sync, &flags), GW_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(gw_last_error()).find("gw_sync_bucket_ready is not supported"), std::string::npos)
      << gw_last_error();
}

}  // namespace
