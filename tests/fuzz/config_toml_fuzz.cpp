// libFuzzer target of the TOML loader (runtime/config): the input is a configuration text, as
// gw_runtime_options.config_text or a file would give it. It is parsed, its plugin_path read, and
// validated against the full schema (the built-in sections and every section of the build's plugins);
// a valid one is dumped, hashed and read back. Every outcome must be a gw::Error with a status other
// than GW_ERR_INTERNAL and a message; any other exception, a crash or an out-of-bounds access (ASan)
// is a finding.
#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "config/config.hpp"
#include "core/error.hpp"
#include "instance/runtime.hpp"

namespace {

// The schema of a runtime with every plugin of the build loaded, made once.
const gw::config::Schema& schema() {
  static const gw::config::Schema s = [] {
    gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
    o.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    o.log_level = GW_LOG_ERROR;
    const char* paths[] = {GW_FUZZ_PLUGIN_DIR};
    o.plugin_paths = paths;
    o.num_plugin_paths = 1;
    gw_runtime* rt = nullptr;
    if (gw_runtime_create(&o, &rt) != GW_OK) {
      std::fprintf(stderr, "fuzz setup: %s\n", gw_last_error());
      std::abort();
    }
    // The runtime stays: destroying it would unload plugins whose coverage counters libFuzzer holds.
    return rt->impl.config().schema();
  }();
  return s;
}

[[noreturn]] void finding(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "finding: %s\ninput:\n%s\n", what.c_str(), text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gw::config::Document doc = gw::config::Document::from_text(text);
    (void)gw::config::bootstrap_plugin_path(doc, false);
    const gw::config::Config config(schema(), doc, false);
    // A valid configuration dumps to TOML that loads back to the same configuration.
    const std::string dumped = config.dump_toml();
    const gw::config::Config again(schema(), gw::config::Document::from_text(dumped), false);
    if (again.hash() != config.hash()) finding("the dump of a valid configuration loads to another hash", text);
  } catch (const gw::Error& e) {
    if (e.status() == GW_ERR_INTERNAL || e.status() == GW_OK) finding(std::string("status ") + gw_status_string(e.status()) + ": " + e.what(), text);
    if (std::string(e.what()).empty()) finding("an error without a message", text);
  } catch (const std::bad_alloc&) {
    finding("out of memory", text);
  } catch (const std::exception& e) {
    // Not a gw::Error: the C ABI would report it as "internal error".
    finding(std::string("an exception that is not a gw::Error: ") + e.what(), text);
  }
  return 0;
}
