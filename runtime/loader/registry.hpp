// Plugin discovery and loading (Boost.DLL finds the library and its one entry symbol, nothing more).
//
// Search order: the application's and the config's plugin paths, GRADWIRE_PLUGIN_PATH, the folder
// gradwire/plugins next to libgradwire itself, then the install prefix's plugin folder. In a folder every
// "*.so" file is a candidate; a path may also name a plugin file. Every candidate is loaded and
// checked; one that fails is kept with its error, so `gradwire plugins` can show it and a request for a
// missing component can name every path tried and every loader message.
#pragma once

#include <gradwire/plugin.h>

#include <boost/dll/shared_library.hpp>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "loader/host.hpp"

namespace gw {

// One loaded plugin library. Objects a plugin creates hold a shared_ptr to it, so the library stays
// loaded (and fini is not called) while any of them lives.
class Plugin {
 public:
  // Loads, checks the descriptor and calls init. Throws GW_ERR_PLUGIN or GW_ERR_VERSION.
  Plugin(const std::string& path, std::shared_ptr<const Logger> logger);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // The descriptor, its components, key tables and vtables as this host's versions of the structs
  // (whatever header the plugin was built with): read them with the host's layouts and indexing.
  const gw_plugin_descriptor& descriptor() const { return descriptor_; }
  void* state() const { return state_; }
  const gw_host* host() const { return host_->host(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  boost::dll::shared_library library_;
  std::unique_ptr<HostServices> host_;
  void adopt_descriptor(const gw_plugin_descriptor& d);
  gw_plugin_descriptor descriptor_{};
  std::vector<gw_component> components_;
  std::vector<std::vector<gw_config_key>> key_tables_;
  std::deque<gw_codec_vtable> codec_vtables_;  // deques: the components point into them
  std::deque<gw_schedule_vtable> schedule_vtables_;
  std::deque<gw_transport_vtable> transport_vtables_;
  void* state_ = nullptr;
  bool initialized_ = false;
};

// A component together with the plugin that keeps its code loaded.
struct ComponentRef {
  std::shared_ptr<Plugin> plugin;
  const gw_component* component = nullptr;

  template <class Vtable>
  const Vtable* vtable() const {
    return static_cast<const Vtable*>(component->vtable);
  }
};

struct Candidate {
  std::string path;
  std::shared_ptr<Plugin> plugin;  // null when it failed to load
  gw_status status = GW_OK;
  std::string error;
};

class Registry {
 public:
  // `first` are the application's and config's paths; a path among them that does not exist is an
  // error (GW_ERR_CONFIG).
  Registry(const std::vector<std::string>& first, std::shared_ptr<const Logger> logger);

  const std::vector<std::string>& search_paths() const { return search_paths_; }
  const std::vector<Candidate>& candidates() const { return candidates_; }

  // The component `name` of `kind`. GW_ERR_NOT_FOUND names every path searched and every failed load.
  ComponentRef find(gw_component_kind kind, const std::string& name) const;
  std::vector<ComponentRef> components(gw_component_kind kind) const;
  // Throws GW_ERR_PLUGIN when two plugins, or two components of one kind, share a name.
  void check_unique() const;

 private:
  void load_candidate(const std::string& file);

  std::shared_ptr<const Logger> logger_;
  std::vector<std::string> search_paths_;
  std::vector<Candidate> candidates_;
};

}  // namespace gw
