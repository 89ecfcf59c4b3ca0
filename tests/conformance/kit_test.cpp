// The conformance kit as a library (tools/conformance): a plugin that passes it loads in the runtime, and
// one the loader refuses fails plugin.load with the loader's own reason. The same verdicts as
// agree.sh, asked of the library rather than the command.
#include <gradwire/gradwire.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "conformance/conformance.hpp"

namespace {

namespace conf = gwcli::conformance;

void quiet(void*, gw_log_level, const char*, const char*) {}

// The loader's verdict on `path` alone: "" when loaded, else its message.
std::string loader_verdict(const std::string& path) {
  const char* paths[] = {path.c_str()};
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.num_plugin_paths = 1;
  options.log = quiet;
  options.flags = GW_RUNTIME_NO_ENV_OVERRIDES | GW_RUNTIME_INSPECT_ONLY;
  gw_runtime* rt = nullptr;
  if (gw_runtime_create(&options, &rt) != GW_OK) return std::string("runtime refused: ") + gw_last_error();
  uint32_t count = 0;
  std::string verdict = "not listed";
  if (gw_runtime_plugin_count(rt, &count) == GW_OK)
    for (uint32_t i = 0; i < count; ++i) {
      gw_plugin_info info = GW_PLUGIN_INFO_INIT;
      std::error_code ec;
      if (gw_runtime_plugin_info(rt, i, &info) == GW_OK && std::filesystem::equivalent(info.path, path, ec)) {
        verdict = info.status == GW_OK ? "" : info.error;
        break;
      }
    }
  gw_runtime_destroy(rt);
  return verdict;
}

conf::Report check(const std::string& path) {
  conf::Options o;
  o.plugin_path = std::filesystem::absolute(path).string();
  o.timeout_s = 30;
  return conf::run(o);
}

TEST(ConformanceKit, APluginThatPassesConformanceLoads) {
  const conf::Report r = check(GW_FIXTURE_CODEC);
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed || c.skipped) << c.name << ": " << c.detail;
  EXPECT_EQ(r.failed, 0u);
  ASSERT_FALSE(r.checks.empty());
  EXPECT_EQ(r.checks.front().name, "plugin.load");
  EXPECT_NE(r.plugin, "?");
  EXPECT_EQ(loader_verdict(GW_FIXTURE_CODEC), "") << "passes conformance but the loader refuses it";
}

TEST(ConformanceKit, APluginTheLoaderRefusesFailsLoadWithTheLoadersReason) {
  const conf::Report r = check(GW_SHORT_VTABLE);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].name, "plugin.load");
  EXPECT_FALSE(r.checks[0].passed);
  EXPECT_EQ(r.failed, 1u);
  const std::string loader = loader_verdict(GW_SHORT_VTABLE);
  ASSERT_FALSE(loader.empty()) << "conformance refuses it but the loader accepts it";
  // Both start with the file's path as each found it; the reasons after it are the same words.
  const auto reason = [](const std::string& m) { return m.substr(m.find(".so: ") + 5); };
  EXPECT_EQ(reason(r.checks[0].detail), reason(loader));
  EXPECT_NE(loader.find("bytes of its first version"), std::string::npos) << loader;
}

TEST(ConformanceKit, PrintsOneLinePerCheckOrOneJsonObject) {
  const conf::Report r = check(GW_SHORT_VTABLE);
  std::ostringstream text, json;
  conf::print(r, false, text);
  EXPECT_NE(text.str().find("FAIL plugin.load: "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("conformance: FAIL (0 passed, 1 failed, 0 skipped)"), std::string::npos) << text.str();
  conf::print(r, true, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_FALSE(j.at("passed").get<bool>());
  EXPECT_EQ(j.at("checks").at(0).at("result"), "fail");
}

TEST(ConformanceKit, AMissingFileIsSaidNotCrashed) {
  const conf::Report r = check("/nonexistent/libgw-missing.so");
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].detail, "/nonexistent/libgw-missing.so does not exist");
}

}  // namespace
