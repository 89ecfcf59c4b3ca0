// Golden bytes of the gw_sync checkpoint blob (docs/sync.md) through the C ABI, one rank: every integer
// little-endian, strings and byte strings as a u64 length and the bytes, FNV-1a 64 at the end.
#include <gradwire/gradwire.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gw_test.hpp"

namespace {

struct Cursor {
  const std::vector<uint8_t>& b;
  size_t at = 0;
  uint64_t le(int n) {
    EXPECT_LE(at + size_t(n), b.size());
    uint64_t v = 0;
    for (int i = 0; i < n && at + size_t(i) < b.size(); ++i) v |= uint64_t(b[at + i]) << (8 * i);
    at += size_t(n);
    return v;
  }
  std::string str() {
    const uint64_t n = le(8);
    if (at + n > b.size()) return "<cut off>";
    std::string s(b.begin() + long(at), b.begin() + long(at + n));
    at += n;
    return s;
  }
};

TEST(SyncBlob, GoldenLayoutOfOneRanksCheckpoint) {
  gwtest::Runtime runtime("", {GW_PLUGIN_DIR});
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  co.rank = 0;
  co.world_size = 1;
  gw_comm* comm = nullptr;
  ASSERT_EQ(gw_comm_create(runtime.rt, &co, &comm), GW_OK) << gw_last_error();
  gw_sync_options so = GW_SYNC_OPTIONS_INIT;
  so.runtime = runtime.rt;
  gw_sync* sync = nullptr;
  ASSERT_EQ(gw_sync_create(comm, &so, &sync), GW_OK) << gw_last_error();
  std::vector<float> grad = {0.5f, -2.0f};
  gw_tensor g = GW_TENSOR_INIT;
  g.data = grad.data();
  g.count = grad.size();
  ASSERT_EQ(gw_sync_register(sync, "w", &g, nullptr), GW_OK) << gw_last_error();
  ASSERT_EQ(gw_sync_finalize(sync), GW_OK) << gw_last_error();
  uint32_t flags = 0;
  ASSERT_EQ(gw_sync_step(sync, &flags), GW_OK) << gw_last_error();
  uint64_t size = 0;
  ASSERT_EQ(gw_sync_save_state(sync, nullptr, 0, &size), GW_OK) << gw_last_error();
  std::vector<uint8_t> blob(size);
  ASSERT_EQ(gw_sync_save_state(sync, blob.data(), blob.size(), &size), GW_OK) << gw_last_error();

  Cursor c{blob};
  EXPECT_EQ(std::memcmp(blob.data(), "GWSY", 4), 0);
  c.at = 4;
  EXPECT_EQ(c.le(4), 4u) << "version";
  EXPECT_EQ(c.le(8), 1u) << "steps";
  EXPECT_EQ(c.le(8), 0u) << "micro-steps (no gw_sync_bucket_ready calls)";
  EXPECT_EQ(c.str(), "every_step") << "schedule";
  c.str();                            // the schedule's own state (its plugin's format)
  EXPECT_EQ(c.le(4), 1u) << "buckets";
  EXPECT_EQ(c.str(), "none") << "codec";
  EXPECT_EQ(c.le(4), 1u) << "tensors";
  EXPECT_EQ(c.str(), "w");
  EXPECT_EQ(c.le(8), 2u) << "count";
  EXPECT_EQ(c.le(8), 1u) << "exchanges";
  EXPECT_EQ(c.le(1), 0u) << "no accumulator";
  EXPECT_EQ(c.le(8), 0u) << "no error-feedback state";
  EXPECT_EQ(c.le(1), 0u) << "no velocity ([codec] momentum off)";
  EXPECT_EQ(c.le(1), 0u) << "no local-SGD anchor";
  EXPECT_EQ(c.le(8), 0u) << "no parameter error-feedback state";
  EXPECT_EQ(c.le(1), 0u) << "no outer momentum (no outer loop)";
  EXPECT_EQ(c.le(4), 0u) << "no background slots";
  EXPECT_EQ(c.le(4), 0u) << "no codec with state (version 3)";
  EXPECT_EQ(c.le(4), 0u) << "no outer steps in flight (version 4)";
  ASSERT_EQ(c.at + 8, blob.size());
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < c.at; ++i) h = (h ^ blob[i]) * 0x100000001b3ull;
  EXPECT_EQ(c.le(8), h) << "FNV-1a 64 of every preceding byte";

  EXPECT_EQ(gw_sync_load_state(sync, blob.data(), blob.size()), GW_OK) << gw_last_error();
  blob[20] ^= 1;
  EXPECT_EQ(gw_sync_load_state(sync, blob.data(), blob.size()), GW_ERR_CORRUPT);
  EXPECT_EQ(gw_sync_destroy(sync), GW_OK);
  EXPECT_EQ(gw_comm_destroy(comm), GW_OK);
}

}  // namespace
