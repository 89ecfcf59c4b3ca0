// One rank of the auto-codec tests, started by `gradwire run -n N -- auto_rank CASE [MODEL EXPECT]`:
//   measured            [codec] name = "auto", numbers measured at finalize (any codec may win)
//   model FILE light    [codec] model = FILE (calibrated for a fast link): expects none or fp16
//   model FILE strong   the same for a slow link: expects int8 or topk
//   bad-allow     an allowed codec that does not exist: gw_runtime_create fails naming it
// Every case checks that all ranks chose the same codec, that gw_sync stats carry it and its reason,
// and that a step gives every rank the same average. Prints "OK rank r" at the end.
#include <string>
#include <vector>

#include "common.hpp"

using namespace synctest;

int main(int argc, char** argv) {
  init_rank_from_env();
  const std::string mode = argc > 1 ? argv[1] : "";
  std::string toml = "[codec]\nname = \"auto\"\nallow = [\"none\", \"fp16\", \"int8\", \"topk\"]\n";
  const std::string expect = argc > 3 ? argv[3] : "";
  if (mode == "model") {
    if (argc < 4 || (expect != "light" && expect != "strong")) die("usage: auto_rank model FILE light|strong");
    toml += "model = \"" + std::string(argv[2]) + "\"\n";
  } else if (mode == "bad-allow") {
    const std::string text = "[codec]\nname = \"auto\"\nallow = [\"none\", \"int9\"]\n";
    gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
    ro.config_text = text.c_str();
    ro.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    gw_runtime* bad = nullptr;
    expect_error(gw_runtime_create(&ro, &bad), GW_ERR_NOT_FOUND, "gw_runtime_create with allow = [\"none\", \"int9\"]");
  } else if (mode != "measured") {
    die("unknown case '" + mode + "'");
  }
  gw_runtime* rt = make_runtime(toml);
  gw_comm* comm = make_comm(rt);
  // One bucket of 16 MB: a layer's weight and its bias.
  std::vector<float> w(4u << 20), b(1000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uniform(1, g_rank, i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uniform(2, g_rank, i);
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  o.runtime = rt;
  gw_sync* sync = nullptr;
  check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
  gw_tensor tw = f32(w.data(), w.size()), tb = f32(b.data(), b.size());
  check(gw_sync_register(sync, "fc.weight", &tw, nullptr), "register");
  check(gw_sync_register(sync, "fc.bias", &tb, nullptr), "register");
  check(gw_sync_finalize(sync), "gw_sync_finalize");

  uint32_t buckets = 0;
  check(gw_sync_bucket_count(sync, &buckets), "bucket count");
  if (buckets != 1) die("expected one bucket, got " + std::to_string(buckets));
  gw_sync_bucket_info info = GW_SYNC_BUCKET_INFO_INIT;
  check(gw_sync_get_bucket_info(sync, 0, &info), "bucket info");
  const std::string codec = info.codec;
  gw_sync_stats stats = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(sync, 0, &stats), "stats");
  if (!stats.codec || codec != stats.codec) die("stats.codec differs from the bucket's codec " + codec);
  const std::string reason = stats.codec_reason ? stats.codec_reason : "";
  std::printf("[%d] auto chose %s: %s\n", g_rank, codec.c_str(), reason.c_str());
  if (reason.find("predicted") == std::string::npos) die("the reason does not give the prediction: '" + reason + "'");
  if (mode == "model") {
    if (expect == "light" && codec != "none" && codec != "fp16")
      die("on a fast link auto chose " + codec + "; expected none or fp16 (" + reason + ")");
    if (expect == "strong" && codec != "int8" && codec != "topk")
      die("behind a slow link auto chose " + codec + "; expected int8 or topk (" + reason + ")");
    if (reason.find(argv[2]) == std::string::npos) die("the reason does not name the model file: " + reason);
  } else if (reason.find("measured now") == std::string::npos) {
    die("the reason does not say the link was measured: " + reason);
  }
  check_identical(comm, codec.data(), codec.size(), "the chosen codec");

  uint32_t flags = 0;
  check(gw_sync_step(sync, &flags), "gw_sync_step");
  if (!(flags & GW_SYNC_GRADIENTS_AVERAGED)) die("the step did not average the gradients");
  check_identical(comm, w.data(), w.size() * 4, "the averaged weight gradient");
  check(gw_sync_destroy(sync), "gw_sync_destroy");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
