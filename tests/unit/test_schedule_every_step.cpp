// The every_step schedule, driven as the synchronizer drives it: one sync per step, skipped steps not
// counted, state saved and restored.
#include <gtest/gtest.h>

#include "config/config.hpp"
#include "core/log.hpp"
#include "loader/registry.hpp"

namespace {

struct Recorder {
  int syncs = 0;
  int others = 0;
};

gw_status sync(void* ctx) {
  static_cast<Recorder*>(ctx)->syncs++;
  return GW_OK;
}
gw_status other(void* ctx) {
  static_cast<Recorder*>(ctx)->others++;
  return GW_OK;
}
gw_status other_slot(void* ctx, uint64_t) { return other(ctx); }

struct EveryStep : ::testing::Test {
  std::shared_ptr<gw::Logger> logger = std::make_shared<gw::Logger>(nullptr, nullptr, GW_LOG_ERROR);
  gw::Registry registry{{GW_PLUGIN_DIR}, logger};
  gw::ComponentRef ref = registry.find(GW_COMPONENT_SCHEDULE, "every_step");
  const gw_schedule_vtable* vt = ref.vtable<gw_schedule_vtable>();
  void* make() {
    void* s = nullptr;
    EXPECT_EQ(vt->create(ref.plugin->state(), ref.plugin->host(), nullptr, &s), GW_OK);
    return s;
  }
  gw_schedule_runtime runtime(Recorder& r) {
    gw_schedule_runtime rt{};
    rt.struct_size = sizeof rt;
    rt.ctx = &r;
    rt.world_size = 2;
    rt.sync_gradients = sync;
    rt.accumulate_gradients = other;
    rt.sync_accumulated = other;
    rt.sync_parameters = other;
    rt.start_gradient_exchange = other_slot;
    rt.finish_gradient_exchange = other_slot;
    rt.keep_local = other;
    return rt;
  }
};

}  // namespace

TEST_F(EveryStep, SynchronizesGradientsEveryStepAndNothingElse) {
  void* s = make();
  Recorder r;
  const gw_schedule_runtime rt = runtime(r);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(vt->on_step(s, &rt), GW_OK);
  EXPECT_EQ(r.syncs, 10);
  EXPECT_EQ(r.others, 0);
  vt->destroy(s);
}

TEST_F(EveryStep, StateRoundTripsAndRejectsGarbage) {
  void* a = make();
  Recorder r;
  const gw_schedule_runtime rt = runtime(r);
  for (int i = 0; i < 3; ++i) vt->on_step(a, &rt);
  vt->step_skipped(a);
  uint64_t size = 0;
  ASSERT_EQ(vt->save_state(a, nullptr, &size), GW_OK);
  std::vector<unsigned char> blob(size);
  ASSERT_EQ(vt->save_state(a, blob.data(), &size), GW_OK);

  void* b = make();
  ASSERT_EQ(vt->load_state(b, blob.data(), blob.size()), GW_OK);
  std::vector<unsigned char> again(size);
  ASSERT_EQ(vt->save_state(b, again.data(), &size), GW_OK);
  EXPECT_EQ(blob, again);

  blob[0] ^= 0xff;
  EXPECT_EQ(vt->load_state(b, blob.data(), blob.size()), GW_ERR_CORRUPT);
  EXPECT_EQ(vt->load_state(b, blob.data(), 3), GW_ERR_CORRUPT);
  uint64_t small = 4;
  EXPECT_EQ(vt->save_state(b, again.data(), &small), GW_ERR_BUFFER_TOO_SMALL);
  vt->destroy(a);
  vt->destroy(b);
}
