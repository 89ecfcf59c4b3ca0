// The `gradwire` command, run as a user would.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gw_test.hpp"

namespace {
const std::string kCli = GW_CLI;
}

TEST(Cli, Version) {
  auto r = gwtest::run_command(kCli + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find(std::string("gradwire ") + gw_version_string()), std::string::npos) << r.output;
}

TEST(Cli, HelpListsCommands) {
  auto r = gwtest::run_command(kCli + " --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"plugins", "config", "bench"}) EXPECT_NE(r.output.find(cmd), std::string::npos) << cmd;
}

TEST(Cli, PluginsListsNoneAndTheOutOfTreePathToo) {
  auto r = gwtest::run_command("GRADWIRE_PLUGIN_PATH=" + std::string(GW_TEST_PLUGIN_DIR) + "/valid:" +
                               std::string(GW_TEST_PLUGIN_DIR) + "/null_entry " + kCli + " plugins");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string abi = "(ABI " + std::to_string(GW_ABI_VERSION_MAJOR) + "." + std::to_string(GW_ABI_VERSION_MINOR) + ")";
  EXPECT_NE(r.output.find("none 1.0.0  " + abi), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("codec none: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("testcodec 0.0.1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAILED "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gw_plugin_entry returned NULL"), std::string::npos) << r.output;
}

TEST(Cli, PluginsJson) {
  auto r = gwtest::run_command(kCli + " plugins --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"search_path\""), std::string::npos);
  EXPECT_NE(r.output.find("\"name\": \"none\""), std::string::npos) << r.output;
}

TEST(Cli, ConfigCheckMisspeltKey) {
  gwtest::TempDir dir;
  const std::string f = dir.write("bad.toml", "[codec]\nname = \"none\"\nerror_fedback = true\n");
  auto r = gwtest::run_command(kCli + " config check " + f);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(f + ":3:1: unknown key 'error_fedback' in [codec]; did you mean 'error_feedback'?"),
            std::string::npos)
      << r.output;
}

TEST(Cli, ConfigCheckValidFile) {
  gwtest::TempDir dir;
  const std::string f = dir.write("ok.toml", "[codec]\nerror_feedback = true\n[bucket]\nbytes = 1_000_000\n");
  auto r = gwtest::run_command(kCli + " config check " + f);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("valid"), std::string::npos);
}

TEST(Cli, ConfigCheckExampleConfigs) {
  for (const char* name : {"/examples/gradwire.toml"}) {
    auto r = gwtest::run_command(kCli + " config check " + std::string(GW_SOURCE_DIR) + name);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.output;
  }
}

TEST(Cli, ConfigDumpShowsDefaultsAndFileValues) {
  gwtest::TempDir dir;
  const std::string f = dir.write("c.toml", "[bucket]\nbytes = 12345\n");
  auto r = gwtest::run_command(kCli + " config dump " + f);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[bucket]\n# Size threshold of a fused bucket in bytes.\nbytes = 12345\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("timeout_s = 300.0"), std::string::npos);
}

TEST(Cli, ConfigDumpOfABrokenFileFails) {
  gwtest::TempDir dir;
  const std::string f = dir.write("c.toml", "[bucket\n");
  auto r = gwtest::run_command(kCli + " config dump " + f);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("TOML syntax error"), std::string::npos) << r.output;
}

TEST(Cli, UnknownBenchSuite) {
  auto r = gwtest::run_command(kCli + " bench --suite P99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown suite 'P99'"), std::string::npos) << r.output;
}

// A failure inside a suite's ranks (here: a transport that is not loaded) ends the command with its
// message and status 1, not an abort.
TEST(Cli, BenchWhoseRanksFailExitsWithTheirMessage) {
  auto r = gwtest::run_command(kCli + " bench --suite P3 --quick --repetitions 1 --transport nosuch");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no transport plugin named 'nosuch'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gradwire: bench: a rank failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

// A result says where and how it was measured: every --json line and the --out file carry the machine,
// the command line and the commit (docs/benchmarks.md, "Result files"); GRADWIRE_COMMIT names the commit
// where the command runs outside a checkout.
TEST(Cli, BenchResultsCarryMachineCommandAndCommit) {
  gwtest::TempDir dir;
  const std::string out = (dir.path / "P1.json").string();
  auto r = gwtest::run_command("GRADWIRE_COMMIT=abc123 " + kCli +
                               " bench --suite P1 --quick --repetitions 1 --json --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto expect_run = [](const nlohmann::json& run, const std::string& where) {
    ASSERT_TRUE(run.is_object()) << where;
    EXPECT_EQ(run.value("commit", ""), "abc123") << where;
    ASSERT_TRUE(run.contains("command") && run["command"].is_array() && run["command"].size() >= 2) << where;
    EXPECT_EQ(run["command"][1], "bench") << where;
    const auto& m = run.value("machine", nlohmann::json::object());
    EXPECT_FALSE(m.value("cpu", "").empty()) << where;
    EXPECT_GT(m.value("cores", 0), 0) << where;
    EXPECT_GT(m.value("memory_bytes", uint64_t{0}), uint64_t{0}) << where;
    EXPECT_EQ(m.value("kernel", "").rfind("Linux ", 0), 0u) << where;
    EXPECT_FALSE(run.value("time", "").empty()) << where;
  };
  std::istringstream lines(r.output);
  int results = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.value("suite", ""), "P1") << line;
    expect_run(j.value("run", nlohmann::json()), line);
    ++results;
  }
  EXPECT_EQ(results, 4) << r.output;  // fp16, bf16, int8, onebit
  std::ifstream file(out);
  ASSERT_TRUE(file) << out;
  const auto doc = nlohmann::json::parse(file);
  expect_run(doc, out);
  EXPECT_EQ(doc.value("suites", nlohmann::json::array()), nlohmann::json::array({"P1"}));
  ASSERT_EQ(doc.value("results", nlohmann::json::array()).size(), 4u) << doc.dump();
  EXPECT_FALSE(doc["results"][0].contains("run"));

  // Without GRADWIRE_COMMIT: the checkout's commit (this build sits inside one), or "unknown".
  r = gwtest::run_command("env -u GRADWIRE_COMMIT " + kCli + " bench --suite P1 --quick --repetitions 1 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream again(out);
  const std::string commit = nlohmann::json::parse(again).value("commit", "");
  const bool sha = commit.size() >= 40 && commit.find_first_not_of("0123456789abcdef") >= 40 &&
                   (commit.size() == 40 || commit.substr(40) == "-dirty");
  EXPECT_TRUE(sha || commit == "unknown") << commit;
}

// The table printer copes with every kind of figure a suite reports (numbers and strings in extra).
TEST(Cli, BenchTableOutput) {
  auto r = gwtest::run_command(kCli + " bench --suite P1,P2 --quick --repetitions 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nP1  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nP2  "), std::string::npos) << r.output;
}
