// Each schedule plugin's contract, driven as the synchronizer drives it: which runtime callbacks each step
// makes, skipped steps not counted, configuration honoured, state saved and restored exactly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/log.hpp"
#include "loader/host.hpp"
#include "loader/registry.hpp"

namespace {

// Records the callbacks of one step as a short word: "G" sync gradients, "A" accumulate, "S" sync the
// accumulator, "P" sync parameters, "L" keep local, "s<n>" start exchange n, "f<n>" finish exchange n.
struct Recorder {
  std::string step;
};
gw_status rec(void* ctx, const std::string& what) {
  static_cast<Recorder*>(ctx)->step += what;
  return GW_OK;
}
gw_status sync_gradients(void* c) { return rec(c, "G"); }
gw_status accumulate(void* c) { return rec(c, "A"); }
gw_status sync_accumulated(void* c) { return rec(c, "S"); }
gw_status sync_parameters(void* c) { return rec(c, "P"); }
gw_status keep_local(void* c) { return rec(c, "L"); }
gw_status start_exchange(void* c, uint64_t slot) { return rec(c, "s" + std::to_string(slot)); }
gw_status finish_exchange(void* c, uint64_t slot) { return rec(c, "f" + std::to_string(slot)); }

class Schedule {
 public:
  Schedule(const std::string& name, const std::string& toml) {
    ref_ = registry_.find(GW_COMPONENT_SCHEDULE, name);
    vt_ = ref_.vtable<gw_schedule_vtable>();
    schema_.add_component(GW_COMPONENT_SCHEDULE, name, ref_.component->help, ref_.component->config_keys,
                          ref_.component->num_config_keys);
    config_ = std::make_unique<gw::config::Config>(schema_, gw::config::Document::from_text(toml), false);
    const std::string section = "schedule." + name;
    gw_config view{config_->section(section), config_->schema().find(section)};
    EXPECT_EQ(vt_->create(ref_.plugin->state(), ref_.plugin->host(), &view, &self_), GW_OK) << gw::take_plugin_error();
  }
  ~Schedule() { vt_->destroy(self_); }

  // Runs `n` steps; returns each step's callbacks.
  std::vector<std::string> run(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      Recorder r;
      gw_schedule_runtime rt{};
      rt.struct_size = sizeof rt;
      rt.ctx = &r;
      rt.world_size = 2;
      rt.sync_gradients = sync_gradients;
      rt.accumulate_gradients = accumulate;
      rt.sync_accumulated = sync_accumulated;
      rt.sync_parameters = sync_parameters;
      rt.start_gradient_exchange = start_exchange;
      rt.finish_gradient_exchange = finish_exchange;
      rt.keep_local = keep_local;
      EXPECT_EQ(vt_->on_step(self_, &rt), GW_OK);
      out.push_back(r.step);
    }
    return out;
  }
  void skip() { EXPECT_EQ(vt_->step_skipped(self_), GW_OK); }
  std::vector<unsigned char> save() {
    uint64_t size = 0;
    EXPECT_EQ(vt_->save_state(self_, nullptr, &size), GW_OK);
    std::vector<unsigned char> blob(size);
    EXPECT_EQ(vt_->save_state(self_, blob.data(), &size), GW_OK);
    return blob;
  }
  gw_status load(const std::vector<unsigned char>& blob) { return vt_->load_state(self_, blob.data(), blob.size()); }
  const gw_schedule_vtable* vt() const { return vt_; }
  void* self() const { return self_; }

 private:
  std::shared_ptr<gw::Logger> logger_ = std::make_shared<gw::Logger>(nullptr, nullptr, GW_LOG_ERROR);
  gw::Registry registry_{{GW_PLUGIN_DIR}, logger_};
  gw::ComponentRef ref_;
  const gw_schedule_vtable* vt_ = nullptr;
  gw::config::Schema schema_ = gw::config::Schema::builtin();
  std::unique_ptr<gw::config::Config> config_;
  void* self_ = nullptr;
};

using Steps = std::vector<std::string>;

}  // namespace

TEST(EveryStep, SynchronizesGradientsEveryStep) {
  Schedule s("every_step", "");
  EXPECT_EQ(s.run(4), (Steps{"G", "G", "G", "G"}));
}

TEST(Accumulate, SynchronizesEveryNthMicroStep) {
  Schedule s("accumulate", "[schedule.accumulate]\nsteps = 3\n");
  EXPECT_EQ(s.run(7), (Steps{"A", "A", "AS", "A", "A", "AS", "A"}));
}

TEST(Accumulate, SkippedMicroStepsDoNotCount) {
  Schedule s("accumulate", "[schedule.accumulate]\nsteps = 2\n");
  EXPECT_EQ(s.run(1), (Steps{"A"}));
  s.skip();
  EXPECT_EQ(s.run(2), (Steps{"AS", "A"}));
}

TEST(LocalSgd, WarmupThenAveragesParametersEveryPeriod) {
  Schedule s("local_sgd", "[schedule.local_sgd]\nperiod = 3\nwarmup = 2\n");
  EXPECT_EQ(s.run(9), (Steps{"G", "G", "L", "L", "L", "PL", "L", "L", "PL"}));
}

TEST(LocalSgd, NoWarmup) {
  Schedule s("local_sgd", "[schedule.local_sgd]\nperiod = 2\n");
  EXPECT_EQ(s.run(5), (Steps{"L", "L", "PL", "L", "PL"}));
}

TEST(Async, AppliesEachExchangeExactlyStalenessStepsLater) {
  Schedule s("async", "[schedule.async]\nstaleness = 2\n");
  EXPECT_EQ(s.run(5), (Steps{"s0L", "s1L", "s2f0", "s3f1", "s4f2"}));
}

TEST(Async, SkippedStepsDoNotShiftTheStaleness) {
  Schedule s("async", "");  // staleness 1
  EXPECT_EQ(s.run(1), (Steps{"s0L"}));
  s.skip();
  EXPECT_EQ(s.run(2), (Steps{"s1f0", "s2f1"}));
}

// Saving mid-run and restoring into a fresh instance continues exactly; garbage and a checkpoint of
// another configuration are refused.
TEST(Schedules, SaveRestoreContinuesExactly) {
  struct Case {
    const char* name;
    const char* toml;
  };
  for (const Case& c : {Case{"every_step", ""}, Case{"accumulate", "[schedule.accumulate]\nsteps = 3\n"},
                        Case{"local_sgd", "[schedule.local_sgd]\nperiod = 3\nwarmup = 1\n"},
                        Case{"async", "[schedule.async]\nstaleness = 2\n"}}) {
    Schedule reference(c.name, c.toml);
    const Steps all = reference.run(10);
    Schedule first(c.name, c.toml);
    first.run(4);
    const auto blob = first.save();
    Schedule resumed(c.name, c.toml);
    ASSERT_EQ(resumed.load(blob), GW_OK) << c.name << ": " << gw::take_plugin_error();
    EXPECT_EQ(resumed.run(6), Steps(all.begin() + 4, all.end())) << c.name;

    auto bad = blob;
    bad[0] ^= 0x55;
    EXPECT_EQ(resumed.load(bad), GW_ERR_CORRUPT) << c.name;
    EXPECT_NE(gw::take_plugin_error().find("state blob was not written by"), std::string::npos) << c.name;
    bad = blob;
    bad.pop_back();
    EXPECT_EQ(resumed.load(bad), GW_ERR_CORRUPT) << c.name;
    uint64_t small = 4;
    std::vector<unsigned char> tiny(4);
    EXPECT_EQ(resumed.vt()->save_state(resumed.self(), tiny.data(), &small), GW_ERR_BUFFER_TOO_SMALL) << c.name;
  }
}

TEST(Schedules, CheckpointOfAnotherConfigurationIsAMismatch) {
  Schedule a("local_sgd", "[schedule.local_sgd]\nperiod = 3\n");
  Schedule b("local_sgd", "[schedule.local_sgd]\nperiod = 4\n");
  EXPECT_EQ(b.load(a.save()), GW_ERR_MISMATCH);
  EXPECT_NE(gw::take_plugin_error().find("another period"), std::string::npos);
  Schedule c("accumulate", "[schedule.accumulate]\nsteps = 2\n");
  Schedule d("accumulate", "");
  EXPECT_EQ(d.load(c.save()), GW_ERR_MISMATCH);
}
