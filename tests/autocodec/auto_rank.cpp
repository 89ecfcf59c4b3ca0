// One rank of the auto-codec tests, started by `gradwire run -n N -- auto_rank CASE [MODEL EXPECT]`:
//   measured            [codec] name = "auto", numbers measured at finalize (any codec may win)
//   model FILE light    [codec] model = FILE (calibrated for a fast link): expects none or fp16
//   model FILE strong   the same for a slow link: expects int8 or topk
//   bad-allow     an allowed codec that does not exist: gw_runtime_create fails naming it
//   drift FILE    FILE claims a link far slower than loopback; [codec] auto_recheck_steps = 3: after
//                 step 3 the measured exchanges are far from the prediction and every rank chooses again
//   steady FILE   the same with auto_drift = 1e9: the choice at finalize stays
//   straggler     measured at finalize; rank 0 arrives 1.5 s late at steps 1-3 (auto_recheck_steps = 3,
//                 auto_drift = 30): the others' exchanges include their wait (hundreds of times the
//                 prediction), rank 0's do not; the check goes by the rank that waited least and neither
//                 chooses again nor keeps the codec with a rescaled expectation. The threshold is wide:
//                 after a rest the exchange itself runs several times slower than measured back to back
//                 (memory that rested is cold: the waiting ranks' tensors, shared-memory segments)
//   adopt LIGHT STRONG  a checkpoint of a run that chose from LIGHT (none or fp16) loaded by a run that
//                 chose from STRONG (int8 or topk): the bucket takes the checkpoint's codec
// Every case checks that all ranks chose the same codec, that gw_sync stats carry it and its reason,
// and that a step gives every rank the same average. Prints "OK rank r" at the end.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

using namespace synctest;

namespace {

// One bucket of 16 MB (a layer's weight and its bias) registered with a sync made from `toml`.
struct Layer {
  std::vector<float> w = std::vector<float>(4u << 20), b = std::vector<float>(1000);
  gw_runtime* rt = nullptr;
  gw_sync* sync = nullptr;
  Layer(gw_comm* comm, gw_runtime* runtime) : rt(runtime) {
    refill(0);
    gw_sync_options o = GW_SYNC_OPTIONS_INIT;
    o.runtime = rt;
    check(gw_sync_create(comm, &o, &sync), "gw_sync_create");
    gw_tensor tw = f32(w.data(), w.size()), tb = f32(b.data(), b.size());
    check(gw_sync_register(sync, "fc.weight", &tw, nullptr), "register");
    check(gw_sync_register(sync, "fc.bias", &tb, nullptr), "register");
    check(gw_sync_finalize(sync), "gw_sync_finalize");
  }
  ~Layer() { check(gw_sync_destroy(sync), "gw_sync_destroy"); }
  void refill(uint64_t step) {
    for (size_t i = 0; i < w.size(); ++i) w[i] = uniform(1 + step, g_rank, i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = uniform(100 + step, g_rank, i);
  }
  void step(gw_comm* comm, uint64_t n) {
    refill(n);
    uint32_t flags = 0;
    check(gw_sync_step(sync, &flags), "gw_sync_step");
    if (!(flags & GW_SYNC_GRADIENTS_AVERAGED)) die("the step did not average the gradients");
    check_identical(comm, w.data(), w.size() * 4, "the averaged weight gradient of step " + std::to_string(n));
  }
  std::string codec() const {
    gw_sync_bucket_info info = GW_SYNC_BUCKET_INFO_INIT;
    check(gw_sync_get_bucket_info(sync, 0, &info), "bucket info");
    return info.codec;
  }
  std::string reason() const {
    gw_sync_stats stats = GW_SYNC_STATS_INIT;
    check(gw_sync_get_stats(sync, 0, &stats), "stats");
    return stats.codec_reason ? stats.codec_reason : "";
  }
};

std::string auto_toml(const std::string& model, const std::string& extra) {
  return "[codec]\nname = \"auto\"\nallow = [\"none\", \"fp16\", \"int8\", \"topk\"]\nerror_feedback = true\n"
         "model = \"" + model + "\"\n" + extra;
}

int recheck_case(bool drifting, const std::string& file) {
  gw_runtime* rt = make_runtime(auto_toml(file, drifting ? "auto_recheck_steps = 3\nauto_drift = 1.5\n"
                                                         : "auto_recheck_steps = 3\nauto_drift = 1e9\n"));
  gw_comm* comm = make_comm(rt);
  {
    Layer layer(comm, rt);
    const std::string first = layer.codec();
    if (first != "int8" && first != "topk") die("behind the file's slow link auto chose " + first + ": " + layer.reason());
    for (uint64_t s = 1; s <= 3; ++s) layer.step(comm, s);
    const std::string codec = layer.codec(), reason = layer.reason();
    std::printf("[%d] after 3 steps: %s: %s\n", g_rank, codec.c_str(), reason.c_str());
    const bool again = reason.find("chosen again at step 3") != std::string::npos;
    if (drifting && !again) die("the exchanges ran far from the file's prediction and auto did not choose again: " + reason);
    if (drifting && reason.find("measured now") == std::string::npos)
      die("the second choice does not say it measured the link: " + reason);
    if (!drifting && (again || codec != first)) die("with auto_drift = 1e9 the choice changed: " + reason);
    check_identical(comm, codec.data(), codec.size(), "the codec after the check");
    layer.step(comm, 4);  // the (possibly new) codec averages alike on every rank
  }
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}

int straggler_case() {
  gw_runtime* rt = make_runtime("[codec]\nname = \"auto\"\nallow = [\"none\", \"fp16\", \"int8\", \"topk\"]\n"
                                "auto_recheck_steps = 3\nauto_drift = 30\n");
  gw_comm* comm = make_comm(rt);
  {
    Layer layer(comm, rt);
    const std::string first = layer.codec();
    for (uint64_t s = 1; s <= 3; ++s) {
      if (g_rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      layer.step(comm, s);
    }
    const std::string codec = layer.codec(), reason = layer.reason();
    std::printf("[%d] after 3 steps: %s: %s\n", g_rank, codec.c_str(), reason.c_str());
    if (reason.find("chosen again") != std::string::npos || reason.find("kept at") != std::string::npos ||
        codec != first)
      die("a late rank made the others' waits count as exchange time: " + reason);
    layer.step(comm, 4);
  }
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}

int adopt_case(const std::string& light, const std::string& strong) {
  std::vector<unsigned char> blob;
  std::string saved_codec;
  gw_runtime* rt1 = make_runtime(auto_toml(light, "auto_recheck_steps = 0\n"));
  gw_comm* comm = make_comm(rt1);
  {
    Layer layer(comm, rt1);
    saved_codec = layer.codec();
    if (saved_codec != "none" && saved_codec != "fp16") die("on the fast link auto chose " + saved_codec);
    layer.step(comm, 1);
    uint64_t size = 0;
    check(gw_sync_save_state(layer.sync, nullptr, 0, &size), "gw_sync_save_state (size)");
    blob.resize(size);
    check(gw_sync_save_state(layer.sync, blob.data(), blob.size(), &size), "gw_sync_save_state");
  }
  gw_runtime* rt2 = make_runtime(auto_toml(strong, "auto_recheck_steps = 0\n"));
  {
    Layer layer(comm, rt2);
    const std::string chosen = layer.codec();
    if (chosen != "int8" && chosen != "topk") die("behind the slow link auto chose " + chosen);
    check(gw_sync_load_state(layer.sync, blob.data(), blob.size()), "gw_sync_load_state of the other run's checkpoint");
    if (layer.codec() != saved_codec)
      die("after loading, the bucket uses " + layer.codec() + ", not the checkpoint's " + saved_codec);
    if (layer.reason().find("checkpoint") == std::string::npos) die("the reason does not name the checkpoint: " + layer.reason());
    layer.step(comm, 2);
  }
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt2), "gw_runtime_destroy");
  check(gw_runtime_destroy(rt1), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}

// The choice at finalize ("measured", or "model" with `file` and `expect`): one bucket, the same codec
// on every rank, stats that carry it and say why, and a step that averages alike.
void check_choice(gw_comm* comm, gw_runtime* rt, const std::string& mode, const std::string& expect,
                  const std::string& file) {
  Layer layer(comm, rt);
  uint32_t buckets = 0;
  check(gw_sync_bucket_count(layer.sync, &buckets), "bucket count");
  if (buckets != 1) die("expected one bucket, got " + std::to_string(buckets));
  const std::string codec = layer.codec();
  gw_sync_stats stats = GW_SYNC_STATS_INIT;
  check(gw_sync_get_stats(layer.sync, 0, &stats), "stats");
  if (!stats.codec || codec != stats.codec) die("stats.codec differs from the bucket's codec " + codec);
  const std::string reason = layer.reason();
  std::printf("[%d] auto chose %s: %s\n", g_rank, codec.c_str(), reason.c_str());
  if (reason.find("predicted") == std::string::npos) die("the reason does not give the prediction: '" + reason + "'");
  if (mode == "model") {
    if (expect == "light" && codec != "none" && codec != "fp16")
      die("on a fast link auto chose " + codec + "; expected none or fp16 (" + reason + ")");
    if (expect == "strong" && codec != "int8" && codec != "topk")
      die("behind a slow link auto chose " + codec + "; expected int8 or topk (" + reason + ")");
    if (reason.find(file) == std::string::npos) die("the reason does not name the model file: " + reason);
  } else if (reason.find("measured now") == std::string::npos) {
    die("the reason does not say the link was measured: " + reason);
  }
  check_identical(comm, codec.data(), codec.size(), "the chosen codec");
  layer.step(comm, 1);
}

}  // namespace

int main(int argc, char** argv) {
  init_rank_from_env();
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((mode == "drift" || mode == "steady") && argc > 2) return recheck_case(mode == "drift", argv[2]);
  if (mode == "straggler") return straggler_case();
  if (mode == "adopt" && argc > 3) return adopt_case(argv[2], argv[3]);
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
  check_choice(comm, rt, mode, expect, argc > 2 ? argv[2] : "");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  check(gw_runtime_destroy(rt), "gw_runtime_destroy");
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
