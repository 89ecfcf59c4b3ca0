// A schedule plugin instance: created from its [schedule.<name>] section, called once per step.
#pragma once

#include <gradwire/plugin.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "loader/registry.hpp"

namespace gw::sync {

class Schedule {
 public:
  Schedule(ComponentRef ref, const config::Config& config);
  ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;

  const std::string& name() const { return name_; }
  // Runs on_step; a callback's error (a gw::Error thrown inside it) comes back out unchanged.
  void on_step(const gw_schedule_runtime& rt);
  void step_skipped();
  std::vector<unsigned char> save() const;
  void load(const unsigned char* data, uint64_t size);

 private:
  ComponentRef ref_;
  const gw_schedule_vtable* vtable_;
  void* instance_ = nullptr;
  std::string name_;
};

}  // namespace gw::sync
