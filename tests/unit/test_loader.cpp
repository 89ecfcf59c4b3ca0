// Plugin discovery and loading: each broken plugin gets an error naming the file and what is wrong.
#include <filesystem>
#include <vector>

#include "gw_test.hpp"

namespace {

const std::string kBad = GW_TEST_PLUGIN_DIR;

// The info of the candidate whose file is in `folder`.
gw_plugin_info find_candidate(gw_runtime* rt, const std::string& folder) {
  uint32_t n = 0;
  EXPECT_EQ(gw_runtime_plugin_count(rt, &n), GW_OK);
  for (uint32_t i = 0; i < n; ++i) {
    gw_plugin_info info = GW_PLUGIN_INFO_INIT;
    EXPECT_EQ(gw_runtime_plugin_info(rt, i, &info), GW_OK);
    if (std::string(info.path).find(folder) != std::string::npos) return info;
  }
  ADD_FAILURE() << "no candidate in " << folder;
  return GW_PLUGIN_INFO_INIT;
}

// Loading `case_name`'s folder: the candidate's status and error, and what asking for its codec says.
struct Outcome {
  gw_status status;
  std::string error;
  gw_status request_status;
  std::string request_error;
};

Outcome load_case(const std::string& case_name, const std::string& codec_name) {
  Outcome o{};
  gw_runtime* rt = nullptr;
  const std::string dir = kBad + "/" + case_name;
  EXPECT_EQ(gwtest::create_runtime("", &rt, {dir}), GW_OK) << gw_last_error();
  if (!rt) return o;
  gw_plugin_info info = find_candidate(rt, dir);
  o.status = info.status;
  o.error = info.error ? info.error : "";
  gw_runtime_destroy(rt);
  o.request_status = gwtest::create_runtime("[codec]\nname = \"" + codec_name + "\"\n", &rt, {dir});
  o.request_error = gw_last_error();
  if (rt) gw_runtime_destroy(rt);
  return o;
}

}  // namespace

TEST(Loader, FindsBuiltPluginsNextToTheLibrary) {
  gwtest::Runtime r;
  uint32_t n = 0;
  ASSERT_EQ(gw_runtime_plugin_count(r.rt, &n), GW_OK);
  bool none = false, every_step = false;
  for (uint32_t i = 0; i < n; ++i) {
    gw_plugin_info info = GW_PLUGIN_INFO_INIT;
    ASSERT_EQ(gw_runtime_plugin_info(r.rt, i, &info), GW_OK);
    none = none || std::string(info.name) == "none";
    every_step = every_step || std::string(info.name) == "every_step";
  }
  EXPECT_TRUE(none);
  EXPECT_TRUE(every_step);
  const char* first = nullptr;
  ASSERT_EQ(gw_runtime_search_path(r.rt, 0, &first), GW_OK);
  EXPECT_EQ(std::filesystem::weakly_canonical(first), std::filesystem::weakly_canonical(GW_PLUGIN_DIR));
}

TEST(Loader, ValidTestPluginLoadsWithItsComponents) {
  gwtest::Runtime r("", {kBad + "/valid"});
  gw_plugin_info info = find_candidate(r.rt, kBad + "/valid");
  EXPECT_EQ(info.status, GW_OK) << info.error;
  EXPECT_STREQ(info.name, "testcodec");
  EXPECT_STREQ(info.version, "0.0.1");
  EXPECT_EQ(info.num_components, 1u);
}

TEST(Loader, LibraryWithoutEntrySymbol) {
  Outcome o = load_case("no_entry", "noentry");
  EXPECT_EQ(o.status, GW_ERR_PLUGIN);
  EXPECT_NE(o.error.find("libgw-no_entry.so: is a shared library but does not export gw_plugin_entry"), std::string::npos)
      << o.error;
  EXPECT_EQ(o.request_status, GW_ERR_NOT_FOUND);
  EXPECT_NE(o.request_error.find("files that failed to load"), std::string::npos) << o.request_error;
  EXPECT_NE(o.request_error.find("does not export gw_plugin_entry"), std::string::npos) << o.request_error;
}

TEST(Loader, EntryReturningNull) {
  Outcome o = load_case("null_entry", "nullentry");
  EXPECT_EQ(o.status, GW_ERR_PLUGIN);
  EXPECT_NE(o.error.find("gw_plugin_entry returned NULL"), std::string::npos) << o.error;
  EXPECT_EQ(o.request_status, GW_ERR_NOT_FOUND);
}

TEST(Loader, OtherAbiMajor) {
  Outcome o = load_case("abi_major", "abimajor");
  EXPECT_EQ(o.status, GW_ERR_VERSION);
  EXPECT_NE(o.error.find("built against gradwire ABI " + std::to_string(GW_ABI_VERSION_MAJOR + 1) + "."), std::string::npos)
      << o.error;
  EXPECT_NE(o.error.find("rebuild the plugin"), std::string::npos) << o.error;
  EXPECT_NE(o.request_error.find("libgw-abi_major.so"), std::string::npos) << o.request_error;
}

TEST(Loader, MalformedDescriptor) {
  Outcome o = load_case("malformed", "malformed");
  EXPECT_EQ(o.status, GW_ERR_PLUGIN);
  EXPECT_NE(o.error.find("malformed plugin descriptor: component 'malformed': required vtable member decode is NULL"),
            std::string::npos)
      << o.error;
}

TEST(Loader, CodecOfRoundsWithoutRoundIsRefused) {
  Outcome o = load_case("rounds_without_round", "noround");
  EXPECT_EQ(o.status, GW_ERR_PLUGIN);
  EXPECT_NE(o.error.find("required vtable member round (round_plan is set) is NULL"), std::string::npos) << o.error;
}

TEST(Loader, CodecOfAbi13VtableLoadsAsOneExchange) {
  // A plugin built before 1.4: its vtable's struct_size ends before round_plan. It loads, and its codec is
  // an ordinary one (no GW_CODEC_ROUNDS), whatever bytes follow its vtable.
  gwtest::Runtime r("", {kBad + "/old_vtable"});
  gw_plugin_info info = find_candidate(r.rt, kBad + "/old_vtable");
  ASSERT_EQ(info.status, GW_OK) << info.error;
  gw_codec* codec = nullptr;
  ASSERT_EQ(gw_codec_create(r.rt, "oldcodec", &codec), GW_OK) << gw_last_error();
  gw_codec_properties p = GW_CODEC_PROPERTIES_INIT;
  ASSERT_EQ(gw_codec_get_properties(codec, &p), GW_OK);
  EXPECT_EQ(p.flags & GW_CODEC_ROUNDS, 0u);
  EXPECT_EQ(p.flags & GW_CODEC_LOSSLESS, uint32_t(GW_CODEC_LOSSLESS));
  uint64_t size = 1;
  ASSERT_EQ(gw_codec_save_state(codec, nullptr, 0, &size), GW_OK);  // no state: an empty one
  std::vector<unsigned char> blob(size);
  ASSERT_EQ(gw_codec_save_state(codec, blob.data(), blob.size(), &size), GW_OK);
  EXPECT_EQ(gw_codec_load_state(codec, blob.data(), blob.size()), GW_OK) << gw_last_error();
  blob[blob.size() - 1] ^= 1;
  EXPECT_EQ(gw_codec_load_state(codec, blob.data(), blob.size()), GW_ERR_CORRUPT);
  gw_codec_destroy(codec);
}

TEST(Loader, ConfigKeyDefaultOfTheWrongType) {
  Outcome o = load_case("bad_default", "baddefault");
  EXPECT_EQ(o.status, GW_ERR_PLUGIN);
  EXPECT_NE(o.error.find("[codec.baddefault] ratio: default '\"lots\"' is not a float"), std::string::npos) << o.error;
}

TEST(Loader, FileThatIsNotASharedLibrary) {
  gwtest::TempDir dir;
  dir.write("libgw-garbage.so", "this is not an ELF file\n");
  gw_runtime* rt = nullptr;
  ASSERT_EQ(gwtest::create_runtime("", &rt, {dir.path.string()}), GW_OK) << gw_last_error();
  gw_plugin_info info = find_candidate(rt, dir.path.string());
  EXPECT_EQ(info.status, GW_ERR_PLUGIN);
  EXPECT_NE(std::string(info.error).find("libgw-garbage.so: cannot be loaded as a shared library"), std::string::npos)
      << info.error;
  gw_runtime_destroy(rt);
  // Named directly as a plugin file, it is the same error.
  const std::string file = (dir.path / "libgw-garbage.so").string();
  ASSERT_EQ(gwtest::create_runtime("", &rt, {file}), GW_OK) << gw_last_error();
  EXPECT_EQ(find_candidate(rt, file).status, GW_ERR_PLUGIN);
  gw_runtime_destroy(rt);
}

TEST(Loader, PluginPathThatDoesNotExist) {
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gwtest::create_runtime("", &rt, {"/nonexistent/plugins"}), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find("plugin path '/nonexistent/plugins' does not exist"), std::string::npos);
  EXPECT_EQ(gwtest::create_runtime("[runtime]\nplugin_path = [\"/nowhere\"]\n", &rt), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find("'/nowhere' does not exist"), std::string::npos);
  setenv("GRADWIRE_PLUGIN_PATH", "/also/nowhere", 1);
  EXPECT_EQ(gwtest::create_runtime("", &rt), GW_ERR_CONFIG);
  EXPECT_NE(std::string(gw_last_error()).find("GRADWIRE_PLUGIN_PATH names '/also/nowhere'"), std::string::npos);
  unsetenv("GRADWIRE_PLUGIN_PATH");
}

TEST(Loader, TwoPluginsWithTheSameName) {
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gwtest::create_runtime("", &rt, {kBad + "/duplicate"}), GW_ERR_PLUGIN);
  const std::string m = gw_last_error();
  EXPECT_NE(m.find("two plugins are named 'none'"), std::string::npos) << m;
  EXPECT_NE(m.find("libgw-duplicate.so"), std::string::npos) << m;
  EXPECT_NE(m.find("libgw-none.so"), std::string::npos) << m;
  // Inspection (gradwire plugins) still lists both.
  ASSERT_EQ(gwtest::create_runtime("", &rt, {kBad + "/duplicate"}, GW_RUNTIME_NO_ENV_OVERRIDES | GW_RUNTIME_INSPECT_ONLY),
            GW_OK);
  EXPECT_EQ(find_candidate(rt, kBad + "/duplicate").status, GW_OK);
  gw_runtime_destroy(rt);
}

TEST(Loader, EnvironmentPluginPathIsSearched) {
  setenv("GRADWIRE_PLUGIN_PATH", (kBad + "/valid").c_str(), 1);
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gwtest::create_runtime("[codec]\nname = \"testcodec\"\n", &rt), GW_OK) << gw_last_error();
  unsetenv("GRADWIRE_PLUGIN_PATH");
  gw_runtime_destroy(rt);
}

TEST(Loader, LibraryStaysLoadedWhileACodecLives) {
  gw_runtime* rt = nullptr;
  ASSERT_EQ(gwtest::create_runtime("", &rt), GW_OK);
  gw_codec* codec = nullptr;
  ASSERT_EQ(gw_codec_create(rt, "none", &codec), GW_OK);
  ASSERT_EQ(gw_runtime_destroy(rt), GW_OK);
  // The runtime is gone; the codec's code must still be there.
  float in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
  gw_tensor t = GW_TENSOR_INIT;
  t.data = in;
  t.count = 3;
  unsigned char payload[64];
  uint64_t size = 0;
  ASSERT_EQ(gw_codec_encode(codec, nullptr, &t, payload, sizeof payload, &size), GW_OK) << gw_last_error();
  t.data = out;
  ASSERT_EQ(gw_codec_decode(codec, nullptr, payload, size, &t, 0), GW_OK) << gw_last_error();
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_EQ(gw_codec_destroy(codec), GW_OK);
}
