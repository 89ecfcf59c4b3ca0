// The conformance kit behind `gradwire conformance PLUGIN.so [--json]`: loads one plugin file, runs the
// contract against each of its components and reports one line per check (conformance.hpp).
#include "conformance/conformance.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>


namespace gwcli::conformance {
namespace {

thread_local std::string t_error;

void host_log(void*, gw_log_level level, const char* component, const char* message) {
  if (level <= GW_LOG_WARN) std::fprintf(stderr, "[%s] %s\n", component ? component : "?", message ? message : "");
}
void host_set_error(void*, const char* message) { t_error = message ? message : ""; }
const void* host_get_extension(void*, const char*) { return nullptr; }

void no_log(void*, gw_log_level, const char*, const char*) {}

// Whether the runtime's loader accepts the plugin file, by the loader's own rules (runtime/loader: the
// descriptor, every component, key table and vtable at or above its first version, required members,
// names, init): "" when it does, else the loader's message. Asked through the C ABI like any application
// (gw_runtime_create with the file as a plugin path, gw_runtime_plugin_info), in a child process, so
// that nothing the plugin's init does (a CUDA context) outlives the question into the ranks forked later.
std::string loader_verdict(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return std::string("cannot ask the loader: pipe: ") + std::strerror(errno);
  const pid_t pid = fork();
  if (pid < 0) return std::string("cannot ask the loader: fork: ") + std::strerror(errno);
  if (pid == 0) {
    close(fds[0]);
    std::string verdict = "the loader did not list " + path + " among the plugins it tried";
    const char* paths[] = {path.c_str()};
    gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.num_plugin_paths = 1;
    options.log = no_log;
    options.flags = GW_RUNTIME_NO_ENV_OVERRIDES | GW_RUNTIME_INSPECT_ONLY;
    gw_runtime* rt = nullptr;
    uint32_t count = 0;
    if (gw_runtime_create(&options, &rt) != GW_OK || gw_runtime_plugin_count(rt, &count) != GW_OK) {
      verdict = std::string("the runtime refused it: ") + gw_last_error();
      count = 0;
    }
    for (uint32_t i = 0; i < count; ++i) {
      gw_plugin_info info = GW_PLUGIN_INFO_INIT;
      std::error_code ec;
      if (gw_runtime_plugin_info(rt, i, &info) != GW_OK || !std::filesystem::equivalent(info.path, path, ec)) continue;
      verdict = info.status == GW_OK ? "" : info.error;
      break;
    }
    if (rt != nullptr) gw_runtime_destroy(rt);
    for (size_t done = 0; done < verdict.size();) {
      const ssize_t n = write(fds[1], verdict.data() + done, verdict.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string verdict;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    verdict.append(buf, size_t(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return std::string("the loader's check died: ") + strsignal(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the loader's check failed";
  return verdict;
}

}  // namespace

// ---- configuration: every key at its declared default --------------------------------------------

struct ConfigView {
  struct Value {
    gw_config_type type;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
  };
  std::map<std::string, Value> values;
};

ConfigView* make_config(const gw_component& component) {
  auto* c = new ConfigView;
  for (uint32_t k = 0; k < component.num_config_keys && component.config_keys != nullptr; ++k) {
    const gw_config_key& key = component.config_keys[k];
    if (key.name == nullptr) continue;
    ConfigView::Value v;
    v.type = key.type;
    const std::string text = key.default_value ? key.default_value : "";
    v.b = text == "true";
    v.i = std::strtoll(text.c_str(), nullptr, 10);
    v.f = std::strtod(text.c_str(), nullptr);
    v.s = text.size() >= 2 && text.front() == '"' && text.back() == '"' ? text.substr(1, text.size() - 2) : text;
    c->values[key.name] = v;
  }
  return c;
}
void free_config(ConfigView* c) { delete c; }
const gw_config* as_config(const ConfigView* c) { return reinterpret_cast<const gw_config*>(c); }

namespace {
const ConfigView::Value* find_value(const gw_config* config, const char* key, gw_config_type type, gw_status& st) {
  const auto* c = reinterpret_cast<const ConfigView*>(config);
  st = GW_OK;
  if (c == nullptr || key == nullptr) {
    st = GW_ERR_INVALID_ARGUMENT;
    return nullptr;
  }
  const auto it = c->values.find(key);
  if (it == c->values.end()) {
    st = GW_ERR_NOT_FOUND;
    return nullptr;
  }
  const bool numeric_ok = type == GW_CONFIG_FLOAT && it->second.type == GW_CONFIG_INT;
  if (it->second.type != type && !numeric_ok) {
    st = GW_ERR_INVALID_ARGUMENT;
    return nullptr;
  }
  return &it->second;
}
gw_status get_bool(const gw_config* c, const char* key, int32_t* out) {
  gw_status st;
  const auto* v = find_value(c, key, GW_CONFIG_BOOL, st);
  if (v && out) *out = v->b ? 1 : 0;
  return st;
}
gw_status get_int(const gw_config* c, const char* key, int64_t* out) {
  gw_status st;
  const auto* v = find_value(c, key, GW_CONFIG_INT, st);
  if (v && out) *out = v->i;
  return st;
}
gw_status get_float(const gw_config* c, const char* key, double* out) {
  gw_status st;
  const auto* v = find_value(c, key, GW_CONFIG_FLOAT, st);
  if (v && out) *out = v->f;
  return st;
}
gw_status get_string(const gw_config* c, const char* key, const char** out) {
  gw_status st;
  const auto* v = find_value(c, key, GW_CONFIG_STRING, st);
  if (v && out) *out = v->s.c_str();
  return st;
}

gw_host make_host() {
  gw_host h{};
  h.struct_size = sizeof h;
  h.abi_major = GW_ABI_VERSION_MAJOR;
  h.abi_minor = GW_ABI_VERSION_MINOR;
  h.log = host_log;
  h.set_error = host_set_error;
  h.config_get_bool = get_bool;
  h.config_get_int = get_int;
  h.config_get_float = get_float;
  h.config_get_string = get_string;
  h.get_extension = host_get_extension;
  return h;
}
const gw_host g_host = make_host();
}  // namespace

const gw_host* host() { return &g_host; }
std::string take_error() {
  std::string e = t_error.empty() ? "(no message)" : t_error;
  t_error.clear();
  return e;
}
void clear_error() { t_error.clear(); }

bool Plugin::load(const std::string& path) {
  // Acceptance is the loader's to decide, so that a plugin passes conformance only if it also loads.
  load_error = loader_verdict(path);
  if (!load_error.empty()) return false;
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    load_error = std::string("cannot load it: ") + dlerror();
    return false;
  }
  auto entry = reinterpret_cast<gw_plugin_entry_fn>(dlsym(handle, GW_PLUGIN_ENTRY_NAME));
  if (entry == nullptr) {
    load_error = "it does not export gw_plugin_entry (is it a gradwire plugin? is the symbol hidden?)";
    return false;
  }
  descriptor = entry(GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  if (descriptor == nullptr) {
    load_error = "gw_plugin_entry returned NULL for this host's ABI " + std::to_string(GW_ABI_VERSION_MAJOR) + "." +
                 std::to_string(GW_ABI_VERSION_MINOR);
    return false;
  }
  return true;
}

bool Plugin::init() {
  if (descriptor->init == nullptr) return true;
  clear_error();
  return descriptor->init(host(), &state) == GW_OK;
}

void Plugin::fini() {
  if (descriptor->fini != nullptr) descriptor->fini(state);
}

// ---- rank processes ---------------------------------------------------------------------------------

namespace {

// Frames between a rank and the parent: [type : u8][length : u32][bytes].
enum : char { kGather = 'G', kReport = 'R', kKill = 'K', kGathered = 'g', kGone = 'x' };

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= size_t(r);
  }
  return true;
}

bool send_frame(int fd, char type, const std::string& body) {
  const uint32_t n = uint32_t(body.size());
  return write_all(fd, &type, 1) && write_all(fd, &n, 4) && write_all(fd, body.data(), body.size());
}

bool recv_frame(int fd, char& type, std::string& body) {
  uint32_t n = 0;
  if (!read_all(fd, &type, 1) || !read_all(fd, &n, 4)) return false;
  body.resize(n);
  return read_all(fd, body.data(), n);
}

}  // namespace

bool RankLink::allgather(const std::string& mine, std::vector<std::string>& out, const std::function<void()>& tick) {
  if (!send_frame(fd_, kGather, mine)) return false;
  if (tick) {
    pollfd p{fd_, POLLIN, 0};
    while (poll(&p, 1, 1) == 0) tick();
  }
  char type = 0;
  std::string body;
  if (!recv_frame(fd_, type, body) || type != kGathered) return false;
  out.clear();
  size_t at = 0;
  while (at + 4 <= body.size()) {
    uint32_t n = 0;
    std::memcpy(&n, body.data() + at, 4);
    at += 4;
    out.push_back(body.substr(at, n));
    at += n;
  }
  return out.size() == size_;
}

bool RankLink::sync(const std::function<void()>& tick) {
  std::vector<std::string> ignored;
  return allgather("", ignored, tick);
}

void RankLink::report(const std::string& name, bool passed, const std::string& detail) {
  send_frame(fd_, kReport, std::string(passed ? "1" : "0") + name + '\0' + detail);
}

void RankLink::skip(const std::string& name, const std::string& why) {
  send_frame(fd_, kReport, std::string("2") + name + '\0' + why);
}

void RankLink::die() {
  send_frame(fd_, kKill, "");
  for (;;) pause();
}

gw_status link_allgather(void* user, const void* in, uint64_t bytes, void* out) {
  auto* link = static_cast<RankLink*>(user);
  std::vector<std::string> all;
  if (!link->allgather(std::string(static_cast<const char*>(in), bytes), all)) {
    host_set_error(nullptr, "conformance rendezvous: a rank is gone");
    return GW_ERR_TRANSPORT;
  }
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != bytes) return GW_ERR_MISMATCH;
    std::memcpy(static_cast<char*>(out) + r * bytes, all[r].data(), bytes);
  }
  return GW_OK;
}

std::vector<Check> run_group(const std::string& group, uint32_t ranks, double deadline_s,
                             const std::function<void(RankLink&)>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  struct Child {
    pid_t pid = -1;
    int fd = -1;
    bool alive = true;
    bool kill_asked = false;
    bool has_gather = false;
    std::string gather;
    int wait_status = 0;
  };
  std::vector<Child> children(ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return {{group + ".processes", false, false, "socketpair failed"}};
    const pid_t pid = fork();
    if (pid == 0) {
      for (uint32_t q = 0; q < r; ++q) close(children[q].fd);
      close(sv[0]);
      RankLink link(sv[1], r, ranks);
      try {
        body(link);
      } catch (const std::exception& e) {
        link.report(group + ".exception", false, std::string("rank threw: ") + e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(0);
    }
    close(sv[1]);
    children[r].pid = pid;
    children[r].fd = sv[0];
  }

  // Per check: the ranks' reports; the same detail from several ranks is written once.
  struct Reports {
    uint32_t failed = 0, skipped = 0, total = 0;
    std::vector<std::pair<std::string, std::vector<uint32_t>>> details;  // detail -> ranks (failures first)
    std::string pass_detail;
  };
  std::map<std::string, Reports> merged;
  std::vector<std::string> order;
  std::string process_problems;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  auto live = [&] {
    uint32_t n = 0;
    for (auto& c : children) n += c.alive;
    return n;
  };
  while (live() > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      for (uint32_t r = 0; r < ranks; ++r)
        if (children[r].alive) {
          kill(children[r].pid, SIGKILL);
          process_problems += "rank " + std::to_string(r) + " did not finish within " +
                              std::to_string(int(deadline_s)) + " s (a hang); ";
          children[r].alive = false;
          close(children[r].fd);
        }
      break;
    }
    std::vector<pollfd> fds;
    std::vector<uint32_t> which;
    for (uint32_t r = 0; r < ranks; ++r)
      if (children[r].alive) {
        fds.push_back({children[r].fd, POLLIN, 0});
        which.push_back(r);
      }
    if (poll(fds.data(), fds.size(), 200) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Child& c = children[which[i]];
      char type = 0;
      std::string frame;
      if (!recv_frame(c.fd, type, frame)) {  // exited
        c.alive = false;
        close(c.fd);
        continue;
      }
      if (type == kReport && !frame.empty()) {
        const char verdict = frame[0];  // '1' passed, '0' failed, '2' not run
        const size_t nul = frame.find('\0');
        const std::string name = frame.substr(1, nul - 1);
        const std::string detail = nul == std::string::npos ? "" : frame.substr(nul + 1);
        auto [it, fresh] = merged.try_emplace(name);
        if (fresh) order.push_back(name);
        Reports& rep = it->second;
        rep.total++;
        if (verdict == '1') {
          if (rep.pass_detail.empty()) rep.pass_detail = detail;
        } else {
          rep.failed += verdict == '0';
          rep.skipped += verdict == '2';
          auto d = std::find_if(rep.details.begin(), rep.details.end(), [&](auto& e) { return e.first == detail; });
          if (d == rep.details.end()) rep.details.push_back({detail, {which[i]}});
          else d->second.push_back(which[i]);
        }
      } else if (type == kKill) {
        c.kill_asked = true;
        kill(c.pid, SIGKILL);
      } else if (type == kGather) {
        c.has_gather = true;
        c.gather = frame;
      }
    }
    // A gather completes when every rank still running has contributed; a rank that is gone fails it.
    bool any = false, all = true;
    for (auto& c : children) {
      any = any || c.has_gather;
      if (c.alive && !c.has_gather) all = false;
    }
    if (any && all) {
      bool complete = true;
      std::string out;
      for (auto& c : children) {
        if (!c.has_gather) complete = false;
        const uint32_t n = uint32_t(c.gather.size());
        out.append(reinterpret_cast<const char*>(&n), 4);
        out += c.gather;
      }
      for (auto& c : children) {
        if (c.alive && c.has_gather) send_frame(c.fd, complete ? kGathered : kGone, out);
        c.has_gather = false;
        c.gather.clear();
      }
    }
  }
  for (uint32_t r = 0; r < ranks; ++r) {
    Child& c = children[r];
    if (c.alive) close(c.fd);
    waitpid(c.pid, &c.wait_status, 0);
    if (c.kill_asked) continue;
    if (WIFSIGNALED(c.wait_status) && WTERMSIG(c.wait_status) != SIGKILL)
      process_problems += "rank " + std::to_string(r) + " crashed (signal " + std::to_string(WTERMSIG(c.wait_status)) +
                          ": " + strsignal(WTERMSIG(c.wait_status)) + "); ";
    else if (WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) != 0)
      process_problems += "rank " + std::to_string(r) + " exited with status " +
                          std::to_string(WEXITSTATUS(c.wait_status)) + "; ";
  }
  std::vector<Check> out;
  for (const auto& name : order) {
    const Reports& rep = merged[name];
    Check c{name, rep.failed == 0 && rep.skipped == 0, rep.failed == 0 && rep.skipped > 0, rep.pass_detail};
    if (!c.passed) {
      c.detail.clear();
      for (const auto& [detail, by] : rep.details) {
        std::string who = by.size() == 1 ? "rank " : "ranks ";
        for (size_t k = 0; k < by.size(); ++k) who += (k ? ", " : "") + std::to_string(by[k]);
        c.detail += (c.detail.empty() ? "" : "; ") + who + ": " + detail;
      }
    }
    out.push_back(c);
  }
  if (!process_problems.empty())
    out.push_back({group + ".processes", false, false, process_problems.substr(0, process_problems.size() - 2)});
  return out;
}

gw_runtime* open_runtime_with(const std::string& plugin_path, const std::string& toml_text, std::string& error) {
  char dir_template[] = "/tmp/gw-conformance-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) {
    error = "cannot create a temporary directory";
    return nullptr;
  }
  const std::string file = std::string(dir) + "/gradwire.toml";
  {
    std::ofstream f(file);
    f << toml_text;
  }
  const char* paths[] = {plugin_path.c_str()};
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.config_path = file.c_str();
  options.plugin_paths = paths;
  options.num_plugin_paths = 1;
  gw_runtime* rt = nullptr;
  const gw_status st = gw_runtime_create(&options, &rt);
  std::filesystem::remove_all(dir);
  if (st != GW_OK) {
    error = std::string(gw_status_string(st)) + ": " + gw_last_error();
    return nullptr;
  }
  return rt;
}

// ---- the whole run --------------------------------------------------------------------------------

Report run(const Options& o) {
  Report r;
  r.file = o.plugin_path;
  Plugin plugin;
  if (!std::filesystem::exists(o.plugin_path)) {
    r.checks.push_back({"plugin.load", false, false, o.plugin_path + " does not exist"});
  } else if (!plugin.load(o.plugin_path)) {
    r.checks.push_back({"plugin.load", false, false, plugin.load_error});
  } else {
    r.plugin = plugin.descriptor->name;
    r.checks.push_back({"plugin.load", true, false, ""});
    bool any = false;
    // The loader accepted every component; the array is strided by the plugin's own struct size.
    const uint32_t stride = plugin.descriptor->num_components > 0 ? plugin.descriptor->components[0].struct_size : 0;
    for (uint32_t i = 0; i < plugin.descriptor->num_components; ++i) {
      const gw_component& c = *reinterpret_cast<const gw_component*>(
          reinterpret_cast<const unsigned char*>(plugin.descriptor->components) + size_t(stride) * i);
      if (!o.component.empty() && o.component != c.name) continue;
      any = true;
      std::vector<Check> more;
      if (c.kind == GW_COMPONENT_CODEC) more = check_codec(plugin, c, o);
      else if (c.kind == GW_COMPONENT_TRANSPORT) more = check_transport(plugin, c, o);
      else if (c.kind == GW_COMPONENT_SCHEDULE) more = check_schedule(plugin, c, o);
      else more.push_back({std::string("plugin.") + c.name, false, false, "unknown component kind"});
      r.checks.insert(r.checks.end(), more.begin(), more.end());
    }
    if (!any)
      r.checks.push_back({"plugin.components", false, false,
                          o.component.empty() ? "the plugin declares no component"
                                              : "no component named '" + o.component + "'"});
  }
  for (const auto& c : r.checks) {
    r.failed += !c.passed && !c.skipped;
    r.skipped += c.skipped;
  }
  return r;
}

void print(const Report& r, bool json, std::ostream& out) {
  if (json) {
    nlohmann::json j;
    j["plugin"] = r.plugin;
    j["file"] = r.file;
    j["passed"] = r.failed == 0;
    j["checks"] = nlohmann::json::array();
    for (const auto& c : r.checks)
      j["checks"].push_back({{"name", c.name},
                             {"result", c.skipped ? "skip" : c.passed ? "pass" : "fail"},
                             {"detail", c.detail}});
    out << j.dump(2) << "\n";
    return;
  }
  for (const auto& c : r.checks) {
    out << (c.skipped ? "SKIP " : c.passed ? "PASS " : "FAIL ") << c.name;
    if (!c.detail.empty()) out << ": " << c.detail;
    out << "\n";
  }
  out << (r.failed == 0 ? "conformance: PASS" : "conformance: FAIL") << " (" << r.checks.size() - r.failed - r.skipped
      << " passed, " << r.failed << " failed, " << r.skipped << " skipped) for " << r.file << "\n";
}

}  // namespace gwcli::conformance
