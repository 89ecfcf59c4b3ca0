// The conformance kit behind `gradwire conformance PLUGIN.so`: the contract of docs/transport-guide.md
// and docs/plugin-guide.md run against every component of one plugin file. The kit is a plugin host of
// its own for the unit checks (it loads the file with dlopen and calls the vtables directly, so nothing of the runtime hides a
// plugin's mistake) and a client of libgradwire's C ABI for the checks that run the runtime's collectives
// over the plugin. Checks that need several ranks fork local processes; they meet through the parent
// (a pipe per rank), which also plays the rendezvous of gw_comm_create and kills a rank on request.
#pragma once

#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace gwcli::conformance {

struct Check {
  std::string name;    // "transport.tcp_example.ordering"
  bool passed = false;
  bool skipped = false;
  std::string detail;  // what failed (and on which rank), or why skipped
};

struct Options {
  std::string plugin_path;  // absolute
  double timeout_s = 20;    // bounds every wait of one check
  uint32_t ranks = 3;       // point-to-point checks
  bool require_failure_detection = false;  // a killed peer left undetected fails instead of passing with a note
  std::string component;    // check only the component of this name (empty: every one)
};

// The verdict on one plugin file: every check, in order.
struct Report {
  std::string plugin = "?";  // the descriptor's name, once loaded
  std::string file;          // o.plugin_path
  std::vector<Check> checks;
  size_t failed = 0, skipped = 0;
};

// Loads the plugin (acceptance is the runtime loader's own verdict, asked through the C ABI: a plugin
// passes only if it also loads) and runs the checks of each of its components.
Report run(const Options& o);
// One line per check and the verdict, or (json) one object: the plugin, every check and the verdict.
void print(const Report& r, bool json, std::ostream& out);

// The loaded plugin file, and a minimal gw_host: set_error kept per thread, log to stderr at warnings,
// configuration from each key's declared default.
struct Plugin {
  void* handle = nullptr;
  const gw_plugin_descriptor* descriptor = nullptr;
  void* state = nullptr;  // from descriptor->init, per process
  std::string load_error;
  bool load(const std::string& path);
  bool init();  // calls descriptor->init once in this process
  void fini();
};

const gw_host* host();
// The message the plugin set with set_error since the last clear, or "(no message)".
std::string take_error();
void clear_error();
// A configuration view of one component with every key at its declared default; owned by the caller.
struct ConfigView;
ConfigView* make_config(const gw_component& component);
void free_config(ConfigView* c);
const gw_config* as_config(const ConfigView* c);

// ---- several ranks: forked processes that meet through the parent ------------------------------------

class RankLink {
 public:
  RankLink(int fd, uint32_t rank, uint32_t size) : fd_(fd), rank_(rank), size_(size) {}
  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  // Every live rank's `mine`, in rank order; false when a rank is gone or the parent gave up.
  // While it waits, `tick` (when given) runs every millisecond: a transport whose connections need both
  // sides' progress (UCX's wire-up) keeps moving.
  bool allgather(const std::string& mine, std::vector<std::string>& out, const std::function<void()>& tick = {});
  // A synchronization point: allgather of nothing.
  bool sync(const std::function<void()>& tick = {});
  // Reports one check of this rank; the parent merges the ranks' reports by name.
  void report(const std::string& name, bool passed, const std::string& detail);
  // Reports a check this rank did not run (an earlier one failed), with the reason.
  void skip(const std::string& name, const std::string& why);
  // Asks the parent to SIGKILL this process, and waits for it.
  [[noreturn]] void die();

 private:
  int fd_;
  uint32_t rank_;
  uint32_t size_;
};

// Forks `ranks` processes running `body(link)`, serves their allgathers, kills on request, and waits at
// most `deadline_s` for all. Returns the merged checks: one per name reported (failed if any rank failed
// it), plus a failed "<group>.processes" when a rank crashed, hung or exited without being asked to.
std::vector<Check> run_group(const std::string& group, uint32_t ranks, double deadline_s,
                             const std::function<void(RankLink&)>& body);

// gw_comm_create's rendezvous over the link (gw_allgather_fn with user = RankLink*).
gw_status link_allgather(void* user, const void* in, uint64_t bytes, void* out);

// ---- the checks -------------------------------------------------------------------------------------

std::vector<Check> check_codec(Plugin& plugin, const gw_component& c, const Options& o);
std::vector<Check> check_transport(Plugin& plugin, const gw_component& c, const Options& o);
std::vector<Check> check_schedule(Plugin& plugin, const gw_component& c, const Options& o);

// A runtime (C ABI) that loads `plugin_path` first, with a configuration written from `toml_text`.
gw_runtime* open_runtime_with(const std::string& plugin_path, const std::string& toml_text, std::string& error);

}  // namespace gwcli::conformance
