// White-box tests of the parts of the GPU path that need no process: node topologies and the two-level
// decision (group/topology, collectives/two_level), and staging 16-bit tensors through f32
// (codec/staging).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gw_kernels/fp16.h>

#include "codec/staging.hpp"
#include "collectives/two_level.hpp"
#include "core/error.hpp"
#include "group/topology.hpp"

namespace {

using gw::comm::topology_from_keys;

TEST(Topology, NodesFromKeysInRankOrder) {
  const auto t = topology_from_keys({"b", "a", "b", "a", "c", "c"}, "test");
  ASSERT_EQ(t.node_count(), 3u);
  EXPECT_EQ(t.nodes[0], (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(t.nodes[1], (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(t.nodes[2], (std::vector<uint32_t>{4, 5}));
  EXPECT_TRUE(t.even());
  EXPECT_EQ(t.local_index(2), 1u);
  EXPECT_EQ(t.cross_group(3), (std::vector<uint32_t>{2, 3, 5}));
  EXPECT_EQ(t.describe(), "3 nodes: [0 2] [1 3] [4 5]");
}

TEST(Topology, TwoLevelOnlyWhereItHelpsAndUnevenNodesRefusedWhenForced) {
  const auto one_node = topology_from_keys({"a", "a", "a", "a"}, "test");
  const auto per_rank = topology_from_keys({"a", "b", "c", "d"}, "test");
  const auto two_by_two = topology_from_keys({"a", "a", "b", "b"}, "test");
  const auto uneven = topology_from_keys({"a", "a", "b"}, "GW_NODE_ID");
  EXPECT_FALSE(gw::coll::use_two_level(one_node, "auto"));
  EXPECT_FALSE(gw::coll::use_two_level(per_rank, "auto"));
  EXPECT_TRUE(gw::coll::use_two_level(two_by_two, "auto"));
  EXPECT_FALSE(gw::coll::use_two_level(two_by_two, "off"));
  EXPECT_TRUE(gw::coll::use_two_level(one_node, "on"));
  EXPECT_FALSE(gw::coll::use_two_level(uneven, "auto"));
  try {
    gw::coll::use_two_level(uneven, "on");
    FAIL() << "uneven nodes were accepted";
  } catch (const gw::Error& e) {
    EXPECT_EQ(e.status(), GW_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("hold 2, 1 ranks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GW_NODE_ID"), std::string::npos) << e.what();
  }
}

TEST(Topology, CrossPhaseGathersWithTwoNodesOrWhenAsked) {
  EXPECT_TRUE(gw::coll::gathers_encoded(2, "auto"));
  EXPECT_FALSE(gw::coll::gathers_encoded(3, "auto"));
  EXPECT_TRUE(gw::coll::gathers_encoded(4, "gather"));
  EXPECT_FALSE(gw::coll::gathers_encoded(2, "scatter"));
}

TEST(Fp16Conversion, SixteenBitValuesRoundTripExactlyAndRoundToNearestEven) {
  using namespace gw::kernels;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float b = bf16_to_f32(uint16_t(h));
    if (!std::isnan(b)) {
      EXPECT_EQ(f32_to_bf16(b), h);
    } else {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(b))));
    }
    const float f = f16_to_f32(uint16_t(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_f16(f), h);
    }
  }
  // 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), f32_to_bf16(1.0f));
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), uint16_t(f32_to_bf16(1.0f) + 2));
}

TEST(Staging, TensorsReadAddAndWriteThroughF32) {
  using namespace gw::staging;
  using gw::kernels::bf16_to_f32;
  using gw::kernels::f32_to_bf16;
  std::vector<uint16_t> half = {f32_to_bf16(1.5f), f32_to_bf16(-2.0f), f32_to_bf16(3.25f)};
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_BF16;
  t.data = half.data();
  t.count = half.size();
  std::vector<float> f(3);
  read_f32(t, f.data());
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  add_f32(t, f.data());
  EXPECT_EQ(f, (std::vector<float>{3.0f, -4.0f, 6.5f}));
  write_f32(f.data(), t);
  EXPECT_EQ(bf16_to_f32(half[2]), 6.5f);
  t.dtype = GW_DTYPE_F64;
  EXPECT_THROW(read_f32(t, f.data()), gw::Error);
  EXPECT_FALSE(supported(GW_DTYPE_I32));
}

}  // namespace
