#include "suites/run_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace gwcli::bench {
namespace {

namespace fs = std::filesystem;

// The first line of FILE that starts with KEY, the text after its colon, trimmed.
std::string field(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return {};
}

std::vector<std::string> command_line() {
  std::vector<std::string> args;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  return args;
}

// Standard output of a shell command (its last newline removed), or empty when it failed.
std::string output_of(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buffer[256];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  if (pclose(pipe) != 0) return {};
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string commit() {
  if (const char* given = std::getenv("GRADWIRE_COMMIT"); given && *given) return given;
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (; !ec && !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) {
      const std::string git = "git -C " + quoted(dir.string());
      const std::string head = output_of(git + " rev-parse HEAD 2>/dev/null");
      if (head.empty()) break;
      const bool clean = !output_of(git + " diff --quiet HEAD -- 2>/dev/null && echo clean").empty();
      return clean ? head : head + "-dirty";
    }
    if (dir == dir.root_path()) break;
  }
  return "unknown";
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

nlohmann::json run_info() {
  nlohmann::json machine = nlohmann::json::object();
  machine["cpu"] = field("/proc/cpuinfo", "model name");
  machine["cores"] = std::thread::hardware_concurrency();
  const std::string mem_kib = field("/proc/meminfo", "MemTotal");
  machine["memory_bytes"] = mem_kib.empty() ? 0ull : std::strtoull(mem_kib.c_str(), nullptr, 10) * 1024ull;
  utsname u{};
  if (uname(&u) == 0) {
    machine["kernel"] = std::string(u.sysname) + " " + u.release;
  }
  return {{"machine", machine}, {"command", command_line()}, {"commit", commit()}, {"time", utc_now()}};
}

}  // namespace gwcli::bench
