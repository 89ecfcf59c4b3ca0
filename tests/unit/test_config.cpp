// Configuration: every bad input gets GW_ERR_CONFIG with its position and a way out; overrides work.
#include <cstdlib>

#include "gw_test.hpp"

namespace {

// Creates a runtime from TOML text (plus the test plugin folder "valid", providing [codec.testcodec])
// and returns (status, message).
std::pair<gw_status, std::string> try_config(const std::string& toml, uint32_t flags = GW_RUNTIME_NO_ENV_OVERRIDES) {
  gw_runtime* rt = nullptr;
  const gw_status s = gwtest::create_runtime(toml, &rt, {std::string(GW_TEST_PLUGIN_DIR) + "/valid"}, flags);
  std::string message = gw_last_error();
  if (rt) gw_runtime_destroy(rt);
  return {s, message};
}

std::string dump(gw_runtime* rt) {
  size_t n = 0;
  EXPECT_EQ(gw_runtime_config_dump(rt, GW_CONFIG_FORMAT_TOML, nullptr, 0, &n), GW_OK);
  std::string text(n + 1, '\0');
  EXPECT_EQ(gw_runtime_config_dump(rt, GW_CONFIG_FORMAT_TOML, text.data(), text.size(), &n), GW_OK);
  text.resize(n);
  return text;
}

}  // namespace

TEST(Config, DefaultsAreValid) {
  auto [s, m] = try_config("");
  EXPECT_EQ(s, GW_OK) << m;
}

TEST(Config, SyntaxErrorHasLineAndColumn) {
  auto [s, m] = try_config("[codec]\nname = \"none\"\n[bucket\nbytes = 3\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("<config_text>:3:"), std::string::npos) << m;
  EXPECT_NE(m.find("TOML syntax error"), std::string::npos) << m;
}

TEST(Config, UnknownKeySuggestsNearest) {
  auto [s, m] = try_config("[bucket]\nbyts = 100\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("<config_text>:2:1: unknown key 'byts' in [bucket]; did you mean 'bytes'?"), std::string::npos) << m;
}

TEST(Config, UnknownKeyInPluginSectionSuggestsNearest) {
  auto [s, m] = try_config("[codec.testcodec]\nlevle = 4\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("unknown key 'levle' in [codec.testcodec]; did you mean 'level'?"), std::string::npos) << m;
}

TEST(Config, UnknownSectionSuggestsNearest) {
  auto [s, m] = try_config("[codecs]\nname = \"none\"\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("unknown section [codecs]; did you mean [codec]?"), std::string::npos) << m;
}

TEST(Config, UnknownComponentSectionNamesLoadedOnes) {
  auto [s, m] = try_config("[codec.testcodek]\nlevel = 4\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("no codec named 'testcodek' is loaded; did you mean [codec.testcodec]?"), std::string::npos) << m;
}

TEST(Config, WrongTypeSaysWhatWasExpected) {
  auto [s, m] = try_config("[bucket]\nbytes = \"big\"\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("<config_text>:2:9: [bucket] bytes must be an integer, got the string \"big\""), std::string::npos) << m;
  auto [s2, m2] = try_config("[codec]\nerror_feedback = 1\n");
  EXPECT_EQ(s2, GW_ERR_CONFIG);
  EXPECT_NE(m2.find("must be a boolean"), std::string::npos) << m2;
}

TEST(Config, OutOfRangeGivesTheRange) {
  auto [s, m] = try_config("[codec.testcodec]\nlevel = 12\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("[codec.testcodec] level = 12 is out of range; allowed: 1 – 9"), std::string::npos) << m;
  auto [s2, m2] = try_config("[runtime]\ntimeout_s = -1\n");
  EXPECT_EQ(s2, GW_ERR_CONFIG);
  EXPECT_NE(m2.find("timeout_s"), std::string::npos) << m2;
}

TEST(Config, ChoicesSuggestNearest) {
  auto [s, m] = try_config("[runtime]\nlog_level = \"dbug\"\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("did you mean \"debug\"?"), std::string::npos) << m;
}

TEST(Config, SectionMustBeATable) {
  auto [s, m] = try_config("codec = 3\n");
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("'codec' must be a table"), std::string::npos) << m;
  auto [s2, m2] = try_config("[rules]\nmatch = \"*.bias\"\n");
  EXPECT_EQ(s2, GW_ERR_CONFIG);
  EXPECT_NE(m2.find("[[rules]]"), std::string::npos) << m2;
}

TEST(Config, UnknownComponentNameListsSearchPaths) {
  auto [s, m] = try_config("[codec]\nname = \"nome\"\n");
  EXPECT_EQ(s, GW_ERR_NOT_FOUND);
  EXPECT_NE(m.find("<config_text>:2:8: [codec] name = \"nome\""), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'none'?"), std::string::npos) << m;
  EXPECT_NE(m.find("searched, in order:"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(GW_TEST_PLUGIN_DIR) + "/valid"), std::string::npos) << m;
}

TEST(Config, RulesAreValidatedAndFilled) {
  auto [s, m] = try_config("[[rules]]\nmatch = \"*.bias\"\ncodec = \"nope\"\n");
  EXPECT_EQ(s, GW_ERR_NOT_FOUND);
  EXPECT_NE(m.find("[rules] codec = \"nope\""), std::string::npos) << m;

  gwtest::Runtime r("[[rules]]\nmatch = \"*.bias\"\n[[rules]]\nmax_bytes = 4096\ncodec = \"testcodec\"\n",
                    {std::string(GW_TEST_PLUGIN_DIR) + "/valid"});
  const std::string text = dump(r.rt);
  EXPECT_NE(text.find("[[rules]]\nmatch = \"*.bias\"\nmax_bytes = 0\ncodec = \"none\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[[rules]]\nmatch = \"*\"\nmax_bytes = 4096\ncodec = \"testcodec\"\n"), std::string::npos) << text;
}

TEST(Config, PathAndTextTogetherIsAnError) {
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_path = "x.toml";
  o.config_text = "";
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gw_runtime_create(&o, &rt), GW_ERR_INVALID_ARGUMENT);
}

TEST(Config, MissingFileIsAnError) {
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_path = "/nonexistent/gradwire.toml";
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gw_runtime_create(&o, &rt), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find("/nonexistent/gradwire.toml' does not exist"), std::string::npos);
}

TEST(Config, FileErrorsNameTheFile) {
  gwtest::TempDir dir;
  const std::string path = dir.write("train.toml", "[codec]\nerror_feedback = true\n\n[bucket]\nbyts = 1\n");
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_path = path.c_str();
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gw_runtime_create(&o, &rt), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find(path + ":5:1: unknown key 'byts'"), std::string::npos) << gw_last_error();
}

TEST(Config, EnvironmentOverridesSingleKeys) {
  setenv("GRADWIRE_BUCKET_BYTES", "4096", 1);
  setenv("GRADWIRE_CODEC_TESTCODEC_LEVEL", "7", 1);
  gw_runtime* rt = nullptr;
  ASSERT_EQ(gwtest::create_runtime("[bucket]\nbytes = 100\n", &rt, {std::string(GW_TEST_PLUGIN_DIR) + "/valid"}, 0),
            GW_OK)
      << gw_last_error();
  const std::string text = dump(rt);
  gw_runtime_destroy(rt);
  EXPECT_NE(text.find("bytes = 4096\n"), std::string::npos) << text;
  EXPECT_NE(text.find("level = 7\n"), std::string::npos) << text;

  setenv("GRADWIRE_BUCKET_BYTES", "lots", 1);
  auto [s, m] = try_config("", 0);
  EXPECT_EQ(s, GW_ERR_CONFIG);
  EXPECT_NE(m.find("environment GRADWIRE_BUCKET_BYTES=lots: expected an integer"), std::string::npos) << m;
  setenv("GRADWIRE_BUCKET_BYTES", "0", 1);
  auto [s2, m2] = try_config("", 0);
  EXPECT_EQ(s2, GW_ERR_CONFIG);
  EXPECT_NE(m2.find("environment GRADWIRE_BUCKET_BYTES: [bucket] bytes = 0 is out of range"), std::string::npos) << m2;
  unsetenv("GRADWIRE_BUCKET_BYTES");
  unsetenv("GRADWIRE_CODEC_TESTCODEC_LEVEL");
}

TEST(Config, DumpIsValidInputAndRoundTrips) {
  gwtest::Runtime r("[codec]\nerror_feedback = true\nseed = 42\n[codec.testcodec]\nlevel = 5\n",
                    {std::string(GW_TEST_PLUGIN_DIR) + "/valid"});
  const std::string first = dump(r.rt);
  gwtest::Runtime again(first, {std::string(GW_TEST_PLUGIN_DIR) + "/valid"});
  ASSERT_NE(again.rt, nullptr);
  EXPECT_EQ(dump(again.rt), first);
  EXPECT_NE(first.find("error_feedback = true"), std::string::npos);
  EXPECT_NE(first.find("[codec.testcodec]\n# A level from 1 to 9.\nlevel = 5\n"), std::string::npos) << first;
}

// docs/config-reference.md holds every section this build can produce, verbatim.
TEST(Config, ReferenceDocIsUpToDate) {
  gwtest::Runtime r;
  size_t n = 0;
  ASSERT_EQ(gw_runtime_config_dump(r.rt, GW_CONFIG_FORMAT_REFERENCE, nullptr, 0, &n), GW_OK);
  std::string text(n + 1, '\0');
  ASSERT_EQ(gw_runtime_config_dump(r.rt, GW_CONFIG_FORMAT_REFERENCE, text.data(), text.size(), &n), GW_OK);
  text.resize(n);
  const std::string doc = gwtest::read_file(std::string(GW_SOURCE_DIR) + "/docs/config-reference.md");
  size_t start = 0;
  while (start < text.size()) {
    size_t next = text.find("\n## ", start + 1);
    const std::string section = text.substr(start, next == std::string::npos ? std::string::npos : next + 1 - start);
    EXPECT_NE(doc.find(section), std::string::npos)
        << "docs/config-reference.md lacks or differs in this section; regenerate it with "
           "tests/update-config-reference.sh:\n"
        << section;
    if (next == std::string::npos) break;
    start = next + 1;
  }
}
