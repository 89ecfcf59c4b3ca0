// The `gradwire` command, run as a user would.
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
  EXPECT_NE(r.output.find("none 1.0.0  (ABI 1.3)"), std::string::npos) << r.output;
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

// The table printer copes with every kind of figure a suite reports (numbers and strings in extra).
TEST(Cli, BenchTableOutput) {
  auto r = gwtest::run_command(kCli + " bench --suite P1,P2 --quick --repetitions 1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nP1  "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nP2  "), std::string::npos) << r.output;
}
