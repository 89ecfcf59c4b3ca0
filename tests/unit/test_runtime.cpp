// The C ABI's contract: versions, status strings, NULL handles and struct_size checks everywhere.
#include <cstring>
#include <thread>

#include "gw_test.hpp"

TEST(Version, MatchesHeadersAndString) {
  EXPECT_EQ(gw_abi_version_major(), uint32_t(GW_ABI_VERSION_MAJOR));
  EXPECT_EQ(gw_abi_version_minor(), uint32_t(GW_ABI_VERSION_MINOR));
  const uint32_t v = gw_version();
  const std::string expected =
      std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  EXPECT_EQ(expected, gw_version_string());
}

TEST(Status, EveryStatusHasAName) {
  for (int s = GW_ERR_INTERNAL; s <= GW_IN_PROGRESS; ++s)
    EXPECT_STRNE(gw_status_string(gw_status(s)), "GW_ERR_UNKNOWN") << s;
  EXPECT_STREQ(gw_status_string(GW_ERR_CONFIG), "GW_ERR_CONFIG");
  EXPECT_STREQ(gw_status_string(gw_status(-999)), "GW_ERR_UNKNOWN");
}

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(gw_dtype_size(GW_DTYPE_F32), 4u);
  EXPECT_EQ(gw_dtype_size(GW_DTYPE_BF16), 2u);
  EXPECT_EQ(gw_dtype_size(GW_DTYPE_I64), 8u);
  EXPECT_EQ(gw_dtype_size(gw_dtype(77)), 0u);
  EXPECT_STREQ(gw_dtype_name(GW_DTYPE_F16), "f16");
}

// Every function taking a handle rejects NULL with GW_ERR_INVALID_ARGUMENT and a message saying which.
TEST(NullHandles, EveryFunctionRejectsNull) {
  uint32_t u = 0;
  uint64_t u64 = 0;
  size_t len = 0;
  const char* str = nullptr;
  gw_plugin_info pi = GW_PLUGIN_INFO_INIT;
  gw_component_info ci = GW_COMPONENT_INFO_INIT;
  gw_codec_properties props = GW_CODEC_PROPERTIES_INIT;
  gw_tensor t = GW_TENSOR_INIT;
  char payload[64];
  struct Case {
    const char* name;
    gw_status status;
  };
  const Case cases[] = {
      {"gw_runtime_create(NULL options)", gw_runtime_create(nullptr, nullptr)},
      {"gw_runtime_destroy", gw_runtime_destroy(nullptr)},
      {"gw_runtime_config_dump", gw_runtime_config_dump(nullptr, GW_CONFIG_FORMAT_TOML, nullptr, 0, &len)},
      {"gw_runtime_plugin_count", gw_runtime_plugin_count(nullptr, &u)},
      {"gw_runtime_plugin_info", gw_runtime_plugin_info(nullptr, 0, &pi)},
      {"gw_runtime_component_info", gw_runtime_component_info(nullptr, 0, 0, &ci)},
      {"gw_runtime_search_path_count", gw_runtime_search_path_count(nullptr, &u)},
      {"gw_runtime_search_path", gw_runtime_search_path(nullptr, 0, &str)},
      {"gw_codec_create", gw_codec_create(nullptr, "none", nullptr)},
      {"gw_codec_destroy", gw_codec_destroy(nullptr)},
      {"gw_codec_get_properties", gw_codec_get_properties(nullptr, &props)},
      {"gw_codec_max_encoded_size", gw_codec_max_encoded_size(nullptr, GW_DTYPE_F32, 1, &u64)},
      {"gw_codec_encode", gw_codec_encode(nullptr, nullptr, &t, payload, sizeof payload, &u64)},
      {"gw_codec_decode", gw_codec_decode(nullptr, nullptr, payload, sizeof payload, &t, 0)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.status, GW_ERR_INVALID_ARGUMENT) << c.name;
  }
  // The message names the argument.
  EXPECT_EQ(gw_runtime_destroy(nullptr), GW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(gw_last_error(), "runtime is NULL"), nullptr) << gw_last_error();
  EXPECT_STREQ(gw_codec_name(nullptr), "");
}

TEST(NullHandles, StructSizeZeroIsRejected) {
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.struct_size = 0;
  gw_runtime* rt = nullptr;
  EXPECT_EQ(gw_runtime_create(&o, &rt), GW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(gw_last_error()).find("struct_size"), std::string::npos) << gw_last_error();

  gwtest::Runtime r;
  gw_plugin_info info = GW_PLUGIN_INFO_INIT;
  info.struct_size = 0;
  EXPECT_EQ(gw_runtime_plugin_info(r.rt, 0, &info), GW_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gw_last_error()).find("*_INIT macro"), std::string::npos) << gw_last_error();

  gw_codec* codec = nullptr;
  ASSERT_EQ(gw_codec_create(r.rt, "none", &codec), GW_OK) << gw_last_error();
  float x = 1;
  gw_tensor t = GW_TENSOR_INIT;
  t.data = &x;
  t.count = 1;
  t.struct_size = 0;
  unsigned char payload[64];
  uint64_t size = 0;
  EXPECT_EQ(gw_codec_encode(codec, nullptr, &t, payload, sizeof payload, &size), GW_ERR_INVALID_ARGUMENT);
  gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
  ctx.struct_size = 0;
  t.struct_size = sizeof(gw_tensor);
  EXPECT_EQ(gw_codec_encode(codec, &ctx, &t, payload, sizeof payload, &size), GW_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(gw_codec_destroy(codec), GW_OK);
}

TEST(LastError, IsPerThreadAndClearedBySuccess) {
  EXPECT_EQ(gw_runtime_destroy(nullptr), GW_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(gw_last_error(), "");
  std::string other_thread;
  std::thread([&] { other_thread = gw_last_error(); }).join();
  EXPECT_EQ(other_thread, "");
  uint32_t count = 0;
  gwtest::Runtime r;
  EXPECT_EQ(gw_runtime_plugin_count(r.rt, &count), GW_OK);
  EXPECT_STREQ(gw_last_error(), "");
}

TEST(ConfigDump, BufferProtocol) {
  gwtest::Runtime r;
  size_t length = 0;
  ASSERT_EQ(gw_runtime_config_dump(r.rt, GW_CONFIG_FORMAT_TOML, nullptr, 0, &length), GW_OK);
  ASSERT_GT(length, 0u);
  std::string small(8, '\0');
  EXPECT_EQ(gw_runtime_config_dump(r.rt, GW_CONFIG_FORMAT_TOML, small.data(), small.size(), &length),
            GW_ERR_BUFFER_TOO_SMALL);
  std::string text(length + 1, '\0');
  ASSERT_EQ(gw_runtime_config_dump(r.rt, GW_CONFIG_FORMAT_TOML, text.data(), text.size(), &length), GW_OK);
  text.resize(length);
  EXPECT_NE(text.find("[codec]\n"), std::string::npos);
  EXPECT_NE(text.find("name = \"none\""), std::string::npos);
  EXPECT_EQ(gw_runtime_config_dump(r.rt, gw_config_format(9), nullptr, 0, &length), GW_ERR_INVALID_ARGUMENT);
}
