// One rank of the two-level allreduce tests, started by `gradwire run -n N --ranks-per-node K --
// two_level_rank MODE CODEC OUT` (GW_NODE_ID set per emulated node of K ranks). The rank runs
// gw_allreduce_compressed (avg) with [collectives] two_level = MODE on pseudo-random data, checks that
// every rank holds the same bits, and rank 0 writes the error against the exact average ("rms max") to
// OUT. CODEC none must be exact. With GW_TWO_LEVEL_DATA=FILE the inputs are read from FILE instead: raw
// little-endian f32, `count` values per rank, rank r's at r * count (e.g. real gradients of N ranks).
// GW_TWO_LEVEL_COUNT sets the number of elements (default 200003). Prints "OK rank R", "EXPECTED-ERROR <status> <message>" when the call
// fails with GW_ERR_UNSUPPORTED (uneven nodes with two_level = on), or "FAIL ..." and exits 1.
#include <gradwire/gradwire.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../support/rank_setup.hpp"

namespace {

using gwrank::check;
using gwrank::die;
using gwrank::g_rank;
using gwrank::tensor;

// A deterministic gradient-like value of rank r at element i: a shared signal plus per-rank noise, so
// that the average is not zero and quantization errors do not cancel by construction.
float value(int r, uint64_t i) {
  uint64_t h = (uint64_t(r) + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  const double noise = double(h >> 11) / double(1ull << 53) - 0.5;
  return float(std::sin(double(i) * 0.001) + noise);
}
// Integer-valued inputs: every sum is exact in f32, so an exact algorithm matches bit for bit.
float integer_value(int r, uint64_t i) { return float(int64_t((uint64_t(r) * 7 + i * 13) % 11) - 5); }

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) die("usage: two_level_rank MODE CODEC OUT");
  const std::string mode = argv[1], codec_name = argv[2], out_path = argv[3];
  if (!std::getenv("GW_RANK") || !std::getenv("GW_NODE_ID")) die("run me with `gradwire run --ranks-per-node K`");
  g_rank = std::atoi(std::getenv("GW_RANK"));

  const std::string toml = "[runtime]\ntimeout_s = 60\n[collectives]\ntwo_level = \"" + mode + "\"\n"
                           "pipeline_chunk_bytes = 65536\n";
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_text = toml.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&o, &rt), "gw_runtime_create");
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  gw_comm* comm = nullptr;
  check(gw_comm_create(rt, &co, &comm), "gw_comm_create");
  gw_codec* codec = nullptr;
  check(gw_codec_create(rt, codec_name.c_str(), &codec), "gw_codec_create");
  const int n = int(gw_comm_size(comm));

  const bool exact = codec_name == "none";
  const char* data_file = std::getenv("GW_TWO_LEVEL_DATA");
  std::vector<float> all_inputs;  // every rank's inputs, when read from a file
  uint64_t count = 200003;        // not divisible by the ranks per node
  if (const char* c = std::getenv("GW_TWO_LEVEL_COUNT")) count = std::strtoull(c, nullptr, 10);
  if (data_file && *data_file) {
    if (exact) die("GW_TWO_LEVEL_DATA is for lossy codecs");
    std::ifstream f(data_file, std::ios::binary | std::ios::ate);
    const uint64_t bytes = f ? uint64_t(f.tellg()) : 0;
    if (bytes == 0 || bytes % (4ull * n) != 0)
      die(std::string(data_file) + ": expected " + std::to_string(n) + " ranks' f32 values, " + std::to_string(bytes) +
          " bytes");
    count = bytes / 4 / n;
    all_inputs.resize(bytes / 4);
    f.seekg(0);
    f.read(reinterpret_cast<char*>(all_inputs.data()), std::streamsize(bytes));
  }
  const auto input = [&](int r, uint64_t i) {
    return !all_inputs.empty() ? all_inputs[uint64_t(r) * count + i] : exact ? integer_value(r, i) : value(r, i);
  };
  std::vector<float> in(count), out(count);
  for (uint64_t i = 0; i < count; ++i) in[i] = input(g_rank, i);
  gw_tensor ti = tensor(GW_DTYPE_F32, in.data(), count), to = tensor(GW_DTYPE_F32, out.data(), count);
  const gw_status st = gw_allreduce_compressed(comm, codec, nullptr, &ti, &to, GW_REDUCE_AVG);
  if (st == GW_ERR_UNSUPPORTED) {
    std::printf("EXPECTED-ERROR %s %s\n", gw_status_string(st), gw_last_error());
    gw_codec_destroy(codec);
    gw_comm_destroy(comm);
    gw_runtime_destroy(rt);
    return 0;
  }
  check(st, "gw_allreduce_compressed");

  // Every rank holds the same bits.
  uint64_t mine = fnv1a(out.data(), count * 4);
  std::vector<uint64_t> all(n);
  gw_tensor hi = tensor(GW_DTYPE_I64, &mine, 1), ho = tensor(GW_DTYPE_I64, all.data(), n);
  check(gw_allgather(comm, &hi, &ho), "allgather of result hashes");
  for (int r = 0; r < n; ++r)
    if (all[r] != all[0]) die("rank " + std::to_string(r) + "'s result differs from rank 0's");

  double sq = 0, worst = 0;
  for (uint64_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += input(r, i);
    want /= n;
    const double e = double(out[i]) - want;
    if (exact && std::fabs(e) > 1e-6 * std::max(1.0, std::fabs(want)))
      die("codec none: element " + std::to_string(i) + " is " + std::to_string(out[i]) + ", expected " +
          std::to_string(want));
    sq += e * e;
    worst = std::max(worst, std::fabs(e));
  }
  if (g_rank == 0) {
    FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f) die("cannot write " + out_path);
    std::fprintf(f, "%.9g %.9g\n", std::sqrt(sq / double(count)), worst);
    std::fclose(f);
  }
  check(gw_codec_destroy(codec), "gw_codec_destroy");
  check(gw_comm_destroy(comm), "gw_comm_destroy");
  gw_runtime_destroy(rt);
  std::printf("OK rank %d\n", g_rank);
  return 0;
}
