#include "loader/registry.hpp"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "config/schema.hpp"
#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace fs = std::filesystem;

namespace gw {
namespace {

bool valid_name(const char* s) {
  if (s == nullptr || *s == '\0') return false;
  for (const char* p = s; *p; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (!(std::islower(c) || std::isdigit(c) || c == '_' || c == '-')) return false;
  }
  return true;
}

[[noreturn]] void malformed(const std::string& path, const std::string& what) {
  fail(GW_ERR_PLUGIN, path + ": malformed plugin descriptor: " + what);
}

void require_members(const std::string& path, const gw_component& c,
                     std::initializer_list<std::pair<const char*, bool>> members) {
  for (const auto& [member, present] : members)
    if (!present) malformed(path, std::string("component '") + c.name + "': required vtable member " + member + " is NULL");
}

// A plugin's struct as this host's version: refused below its first version, widened otherwise (members
// past the plugin's struct_size read as absent, members the host does not know ignored).
template <class T>
T adopt(const std::string& path, const T& s, const std::string& what, const char* init) {
  if (s.struct_size < abi::first_size<T>())
    malformed(path, what + ": struct_size " + std::to_string(s.struct_size) + " is below the " +
                        std::to_string(abi::first_size<T>()) + " bytes of its first version; use " + init);
  return abi::widen(s);
}

void check_component(const std::string& path, const gw_component& c) {
  if (!valid_name(c.name)) malformed(path, "a component name must match [a-z0-9_-]+");
  if (c.vtable == nullptr) malformed(path, std::string("component '") + c.name + "' has no vtable");
  if (c.help == nullptr) malformed(path, std::string("component '") + c.name + "' has no help text");
  switch (c.kind) {
    case GW_COMPONENT_CODEC: {
      const auto* v = static_cast<const gw_codec_vtable*>(c.vtable);
      require_members(path, c,
                      {{"create", v->create != nullptr}, {"destroy", v->destroy != nullptr},
                       {"properties", v->properties != nullptr}, {"max_encoded_size", v->max_encoded_size != nullptr},
                       {"encode", v->encode != nullptr}, {"decode", v->decode != nullptr}});
      // Since 1.4: a codec of rounds needs both calls, and save_state goes with load_state. Members past
      // the plugin's struct_size are absent (an older plugin has neither).
      if (GW_STRUCT_HAS(v, gw_codec_vtable, round_plan) && v->round_plan != nullptr)
        require_members(path, c, {{"round (round_plan is set)", GW_STRUCT_HAS(v, gw_codec_vtable, round) && v->round != nullptr}});
      if (GW_STRUCT_HAS(v, gw_codec_vtable, save_state) && v->save_state != nullptr)
        require_members(path, c, {{"load_state (save_state is set)",
                                   GW_STRUCT_HAS(v, gw_codec_vtable, load_state) && v->load_state != nullptr}});
      break;
    }
    case GW_COMPONENT_SCHEDULE: {
      const auto* v = static_cast<const gw_schedule_vtable*>(c.vtable);
      require_members(path, c,
                      {{"create", v->create != nullptr}, {"destroy", v->destroy != nullptr},
                       {"on_step", v->on_step != nullptr}, {"step_skipped", v->step_skipped != nullptr},
                       {"save_state", v->save_state != nullptr}, {"load_state", v->load_state != nullptr}});
      break;
    }
    case GW_COMPONENT_TRANSPORT: {
      const auto* v = static_cast<const gw_transport_vtable*>(c.vtable);
      require_members(path, c,
                      {{"create", v->create != nullptr}, {"destroy", v->destroy != nullptr},
                       {"local_address", v->local_address != nullptr}, {"connect", v->connect != nullptr},
                       {"send_start", v->send_start != nullptr}, {"recv_start", v->recv_start != nullptr},
                       {"test", v->test != nullptr}, {"request_free", v->request_free != nullptr},
                       {"progress", v->progress != nullptr}, {"abort", v->abort != nullptr}});
      break;
    }
    default:
      malformed(path, std::string("component '") + c.name + "' has unknown kind " + std::to_string(int(c.kind)));
  }
  // The key table must describe itself correctly (types, defaults, ranges).
  config::Schema scratch = config::Schema::builtin();
  try {
    scratch.add_component(c.kind, c.name, c.help, c.config_keys, c.num_config_keys);
  } catch (const Error& e) {
    malformed(path, e.what());
  }
}

void check_descriptor(const std::string& path, const gw_plugin_descriptor* d) {
  if (d == nullptr)
    fail(GW_ERR_PLUGIN, path + ": gw_plugin_entry returned NULL: the plugin refused this host (ABI " +
                            std::to_string(GW_ABI_VERSION_MAJOR) + "." + std::to_string(GW_ABI_VERSION_MINOR) +
                            ") or could not initialize; see its log output");
  if (d->struct_size < abi::first_size<gw_plugin_descriptor>())
    malformed(path, "struct_size is " + std::to_string(d->struct_size) + ", below the " +
                        std::to_string(abi::first_size<gw_plugin_descriptor>()) +
                        " bytes of its first version; use GW_PLUGIN_DESCRIPTOR_INIT");
  if (d->abi_major != GW_ABI_VERSION_MAJOR)
    fail(GW_ERR_VERSION, path + ": built against gradwire ABI " + std::to_string(d->abi_major) + "." +
                             std::to_string(d->abi_minor) + ", but this gradwire implements ABI " +
                             std::to_string(GW_ABI_VERSION_MAJOR) + "." + std::to_string(GW_ABI_VERSION_MINOR) +
                             "; rebuild the plugin against this gradwire's headers");
  if (!valid_name(d->name)) malformed(path, "name must match [a-z0-9_-]+");
  if (d->version == nullptr || *d->version == '\0') malformed(path, "version is empty");
  if (d->num_components > 0 && d->components == nullptr)
    malformed(path, std::to_string(d->num_components) + " components declared but components is NULL");
}

}  // namespace

Plugin::Plugin(const std::string& path, std::shared_ptr<const Logger> logger)
    : path_(path), host_(std::make_unique<HostServices>(logger, path)) {
  try {
    library_.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    fail(GW_ERR_PLUGIN, path + ": cannot be loaded as a shared library: " + e.what());
  }
  if (!library_.has(GW_PLUGIN_ENTRY_NAME))
    fail(GW_ERR_PLUGIN, path + ": is a shared library but does not export " GW_PLUGIN_ENTRY_NAME
                               "; it is not a gradwire plugin (see docs/plugin-guide.md)");
  auto& entry = library_.get<const gw_plugin_descriptor*(uint32_t, uint32_t)>(GW_PLUGIN_ENTRY_NAME);
  const gw_plugin_descriptor* d = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  check_descriptor(path, d);
  adopt_descriptor(*d);
  for (const auto& c : components_) check_component(path, c);
  if (descriptor_.init != nullptr) {
    clear_plugin_error();
    check_plugin(descriptor_.init(host_->host(), &state_), path + ": init failed");
  }
  initialized_ = true;
}

void Plugin::adopt_descriptor(const gw_plugin_descriptor& d) {
  descriptor_ = abi::widen(d);
  components_.reserve(d.num_components);
  key_tables_.reserve(d.num_components);
  // The plugin's arrays are strided by its own struct sizes (the first element's struct_size).
  const uint32_t stride = d.num_components > 0 ? d.components[0].struct_size : 0;
  for (uint32_t i = 0; i < d.num_components; ++i) {
    const gw_component& raw = abi::element(d.components, stride, i);
    const std::string what = "component #" + std::to_string(i);
    if (raw.struct_size != stride)
      malformed(path_, what + ": struct_size " + std::to_string(raw.struct_size) + " differs from the first "
                           "component's " + std::to_string(stride) + "; initialize every one with GW_COMPONENT_INIT");
    gw_component c = adopt(path_, raw, what, "GW_COMPONENT_INIT");
    if (c.num_config_keys > 0 && c.config_keys != nullptr) {
      std::vector<gw_config_key> keys;
      const uint32_t key_stride = c.config_keys[0].struct_size;
      for (uint32_t k = 0; k < c.num_config_keys; ++k) {
        const gw_config_key& key = abi::element(c.config_keys, key_stride, k);
        const std::string key_what = what + ", config key #" + std::to_string(k);
        if (key.struct_size != key_stride)
          malformed(path_, key_what + ": struct_size " + std::to_string(key.struct_size) + " differs from the first "
                                      "key's " + std::to_string(key_stride) + "; initialize every one with GW_CONFIG_KEY_INIT");
        keys.push_back(adopt(path_, key, key_what, "GW_CONFIG_KEY_INIT"));
      }
      key_tables_.push_back(std::move(keys));
      c.config_keys = key_tables_.back().data();
    }
    if (c.vtable != nullptr) {
      const std::string vt = what + "'s vtable";
      switch (c.kind) {
        case GW_COMPONENT_CODEC:
          c.vtable = &codec_vtables_.emplace_back(adopt(path_, *static_cast<const gw_codec_vtable*>(c.vtable), vt,
                                                        "sizeof(gw_codec_vtable)"));
          break;
        case GW_COMPONENT_SCHEDULE:
          c.vtable = &schedule_vtables_.emplace_back(adopt(
              path_, *static_cast<const gw_schedule_vtable*>(c.vtable), vt, "sizeof(gw_schedule_vtable)"));
          break;
        case GW_COMPONENT_TRANSPORT:
          c.vtable = &transport_vtables_.emplace_back(adopt(
              path_, *static_cast<const gw_transport_vtable*>(c.vtable), vt, "sizeof(gw_transport_vtable)"));
          break;
        default: break;  // check_component names the unknown kind
      }
    }
    components_.push_back(c);
  }
  descriptor_.components = components_.data();
}

Plugin::~Plugin() {
  if (initialized_ && descriptor_.fini != nullptr) descriptor_.fini(state_);
}

Registry::Registry(const std::vector<std::string>& first, std::shared_ptr<const Logger> logger)
    : logger_(std::move(logger)) {
  for (const auto& p : first) {
    std::error_code ec;
    if (!fs::exists(p, ec))
      fail(GW_ERR_CONFIG, "plugin path '" + p + "' does not exist; fix [runtime] plugin_path or the path "
                          "given to gw_runtime_create");
    search_paths_.push_back(p);
  }
  if (const char* env = std::getenv("GRADWIRE_PLUGIN_PATH")) {
    for (const auto& p : split(env, ':')) {
      std::error_code ec;
      if (!fs::exists(p, ec))
        fail(GW_ERR_CONFIG, "GRADWIRE_PLUGIN_PATH names '" + p + "', which does not exist; fix the variable");
      search_paths_.push_back(p);
    }
  }
  // Next to the library itself (build tree and install tree alike), then the install prefix.
  const fs::path self = boost::dll::this_line_location().parent_path().string();
  search_paths_.push_back((self / GW_PLUGIN_SUBDIR_FROM_LIBDIR).string());
  search_paths_.push_back(GW_INSTALL_PLUGIN_DIR);

  std::set<std::string> seen;
  for (const auto& p : search_paths_) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      const std::string canonical = fs::weakly_canonical(p, ec).string();
      if (seen.insert(canonical).second) load_candidate(p);
      continue;
    }
    if (!fs::is_directory(p, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(p, ec))
      if (entry.path().extension() == ".so" && (entry.is_regular_file(ec) || entry.is_symlink(ec))) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string canonical = fs::weakly_canonical(f, ec).string();
      if (seen.insert(canonical).second) load_candidate(f.string());
    }
  }
}

void Registry::load_candidate(const std::string& file) {
  Candidate c;
  c.path = file;
  try {
    c.plugin = std::make_shared<Plugin>(file, logger_);
    logger_->debug("loader", "loaded " + std::string(c.plugin->descriptor().name) + " " +
                                 c.plugin->descriptor().version + " from " + file);
  } catch (const Error& e) {
    c.status = e.status();
    c.error = e.what();
    logger_->debug("loader", c.error);
  }
  candidates_.push_back(std::move(c));
}

std::vector<ComponentRef> Registry::components(gw_component_kind kind) const {
  std::vector<ComponentRef> out;
  for (const auto& c : candidates_) {
    if (!c.plugin) continue;
    const auto& d = c.plugin->descriptor();
    for (uint32_t i = 0; i < d.num_components; ++i)
      if (d.components[i].kind == kind) out.push_back({c.plugin, &d.components[i]});
  }
  return out;
}

ComponentRef Registry::find(gw_component_kind kind, const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& ref : components(kind)) {
    if (name == ref.component->name) return ref;
    names.push_back(ref.component->name);
  }
  std::string message = "no " + std::string(config::kind_section(kind)) + " plugin named '" + name + "' was found";
  const std::string hint = nearest(name, names);
  if (!hint.empty()) message += "; did you mean '" + hint + "'?";
  message += "\n  loaded " + std::string(config::kind_section(kind)) + "s: " + (names.empty() ? "none" : join(names, ", "));
  message += "\n  searched, in order:";
  for (const auto& p : search_paths_) {
    std::error_code ec;
    message += "\n    " + p + (fs::exists(p, ec) ? "" : " (does not exist)");
  }
  bool any_failed = false;
  for (const auto& c : candidates_) {
    if (c.plugin) continue;
    if (!any_failed) message += "\n  files that failed to load:";
    any_failed = true;
    message += "\n    " + c.error;
  }
  message += "\n  Build or install the plugin, or add its folder to [runtime] plugin_path or GRADWIRE_PLUGIN_PATH.";
  fail(GW_ERR_NOT_FOUND, message);
}

void Registry::check_unique() const {
  std::map<std::string, std::string> plugins;
  std::map<std::string, std::string> components;
  for (const auto& c : candidates_) {
    if (!c.plugin) continue;
    const auto& d = c.plugin->descriptor();
    auto [it, inserted] = plugins.emplace(d.name, c.path);
    if (!inserted)
      fail(GW_ERR_PLUGIN, "two plugins are named '" + std::string(d.name) + "': " + it->second + " and " + c.path +
                              "; remove one of them or take its folder off the plugin path");
    for (uint32_t i = 0; i < d.num_components; ++i) {
      const auto& comp = d.components[i];
      const std::string key = std::string(config::kind_section(comp.kind)) + " '" + comp.name + "'";
      auto [cit, cinserted] = components.emplace(key, c.path);
      if (!cinserted)
        fail(GW_ERR_PLUGIN, "two plugins provide the " + key + ": " + cit->second + " and " + c.path +
                                "; remove one of them or take its folder off the plugin path");
    }
  }
}

}  // namespace gw
