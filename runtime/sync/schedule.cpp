#include "sync/schedule.hpp"

#include "core/error.hpp"
#include "loader/host.hpp"

namespace gw::sync {

Schedule::Schedule(ComponentRef ref, const config::Config& config)
    : ref_(std::move(ref)), vtable_(ref_.vtable<gw_schedule_vtable>()), name_(ref_.component->name) {
  const std::string section = "schedule." + name_;
  gw_config view{config.section(section), config.schema().find(section)};
  clear_plugin_error();
  check_plugin(vtable_->create(ref_.plugin->state(), ref_.plugin->host(), &view, &instance_),
               "schedule '" + name_ + "': create failed");
  if (instance_ == nullptr) fail(GW_ERR_PLUGIN, "schedule '" + name_ + "': create returned GW_OK but no instance");
}

Schedule::~Schedule() {
  if (instance_ != nullptr) vtable_->destroy(instance_);
}

void Schedule::on_step(const gw_schedule_runtime& rt) {
  clear_plugin_error();
  check_plugin(vtable_->on_step(instance_, &rt), "schedule", name_, ": on_step failed");
}

void Schedule::step_skipped() {
  clear_plugin_error();
  check_plugin(vtable_->step_skipped(instance_), "schedule '" + name_ + "': step_skipped failed");
}

std::vector<unsigned char> Schedule::save() const {
  uint64_t size = 0;
  clear_plugin_error();
  check_plugin(vtable_->save_state(instance_, nullptr, &size), "schedule '" + name_ + "': save_state failed");
  std::vector<unsigned char> blob(size);
  check_plugin(vtable_->save_state(instance_, blob.data(), &size), "schedule '" + name_ + "': save_state failed");
  blob.resize(size);
  return blob;
}

void Schedule::load(const unsigned char* data, uint64_t size) {
  clear_plugin_error();
  check_plugin(vtable_->load_state(instance_, data, size), "schedule '" + name_ + "': load_state failed");
}

}  // namespace gw::sync
