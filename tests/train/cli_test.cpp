// `gradwire train` through the built command: bad input gets a message and a non-zero exit; a short
// run on two ranks writes its table, picture and results, and matches one rank.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct Output {
  int status;
  std::string text;
};

// `gradwire train ARGS`, with `env` (VAR=value ...) before it.
Output run(const std::string& args, const std::string& env = "") {
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(GW_CLI) + " train " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) text.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, text};
}

// A fresh folder under the temporary directory, removed with what it holds when it goes out of scope
// (also when an assertion ends the test early).
struct TempDir : fs::path {
  explicit TempDir(const std::string& name)
      : fs::path(fs::temp_directory_path() / ("gw_train_cli_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(*this);
    fs::create_directories(*this);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(*this, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

TEST(TrainCommand, MissingDataSet) {
  const auto out = run("--ranks 1 --data /nonexistent/fashion --out " + TempDir("missing").string());
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("dataset-fashion-mnist"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("--data"), std::string::npos) << out.text;
}

TEST(TrainCommand, CorruptDataSet) {
  const TempDir d("corrupt");
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                           "t10k-labels-idx1-ubyte.gz"}) {
    gzFile f = gzopen((d / name).c_str(), "wb");
    gzwrite(f, "\x01\x02\x03\x04", 4);
    gzclose(f);
  }
  const auto out = run("--ranks 1 --data " + d.string() + " --out " + (d / "out").string());
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("train-images-idx3-ubyte.gz: not a valid IDX file: bad magic"), std::string::npos) << out.text;
  fs::remove_all(d);
}

TEST(TrainCommand, BadOptions) {
  auto out = run("--configs nosuch");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("unknown configuration 'nosuch'"), std::string::npos) << out.text;
  out = run("--hidden 256,x");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("'x' is not one"), std::string::npos) << out.text;
  const TempDir dir("toml");
  const fs::path toml = dir / "bad.toml";
  std::ofstream(toml) << "[codec]\nnmae = \"none\"\n";
  out = run("--config " + toml.string());
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("bad.toml:2:1: unknown key 'nmae'"), std::string::npos) << out.text;
  out = run("--ranks 3 --batch 128 --epochs 1 --configs none");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("multiple of the 3 ranks"), std::string::npos) << out.text;
}

nlohmann::json short_run(int ranks, const fs::path& out) {
  const auto r = run("--ranks " + std::to_string(ranks) +
                     " --epochs 1 --batch 64 --hidden 64 --train-images 4096 --test-images 1000 --evals-per-epoch 2 "
                     "--configs none --out " + out.string());
  EXPECT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("epoch  1.00"), std::string::npos) << r.text;  // progress lines
  EXPECT_NE(r.text.find("reference"), std::string::npos) << r.text;
  EXPECT_TRUE(fs::exists(out / "train.svg"));
  EXPECT_TRUE(fs::exists(out / "table.txt"));
  std::ifstream in(out / "none.json");
  return nlohmann::json::parse(in);
}

TEST(TrainCommand, TwoRanksTrainLikeOne) {
  const TempDir d("ranks");
  const auto two = short_run(2, d / "two");
  const auto one = short_run(1, d / "one");
  ASSERT_EQ(two.at("curve").size(), 2u);
  ASSERT_EQ(one.at("curve").size(), 2u);
  EXPECT_EQ(two.at("ranks"), 2);
  const double acc2 = two["curve"][1]["test_accuracy"], acc1 = one["curve"][1]["test_accuracy"];
  EXPECT_GE(acc2, 0.7);
  // Both see the same global batches; only the order of float sums differs.
  EXPECT_NEAR(acc2, acc1, 0.01);
  // Ring allreduce of the fp32 gradient: each of 2 ranks sends one gradient's worth per step.
  const double grad_bytes = 4.0 * (784 * 64 + 64 + 64 * 10 + 10);
  EXPECT_DOUBLE_EQ(two["curve"][1]["bytes"].get<double>(), 64 * grad_bytes);
  EXPECT_EQ(one["curve"][1]["bytes"].get<double>(), 0);
  fs::remove_all(d);
}

// One compressed configuration through gw_sync on two ranks: top-k 1 % with error feedback sends a small
// fraction of what the uncompressed gradients need and still learns; the user's TOML stays under the
// configuration's overlay (its bucket size is kept, its codec replaced).
TEST(TrainCommand, CompressedThroughTheSynchronizer) {
  const TempDir d("topk");
  const fs::path toml = d / "user.toml";
  std::ofstream(toml) << "[codec]\nname = \"int8\"\n[bucket]\nbytes = 100000\n";
  const auto r = run("--ranks 2 --epochs 1 --batch 64 --hidden 64 --train-images 4096 --test-images 1000 "
                     "--evals-per-epoch 2 --configs topk-ef --config " + toml.string() + " --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("topk-ef"), std::string::npos) << r.text;
  std::ifstream in(d / "topk-ef.json");
  const auto j = nlohmann::json::parse(in);
  const auto& last = j.at("curve").back();
  const double bytes = last.at("bytes").get<double>(), raw = last.at("raw_bytes").get<double>();
  // 64 steps of the 50890-element gradient: the ring would send one gradient's worth per rank per step.
  EXPECT_DOUBLE_EQ(raw, 64 * 4.0 * (784 * 64 + 64 + 64 * 10 + 10));
  EXPECT_GT(bytes, 0);
  EXPECT_LT(bytes, raw / 10) << "top-k 1 % should send far less than fp32";
  EXPECT_GE(last.at("test_accuracy").get<double>(), 0.6);
  EXPECT_GT(j.at("sync").at("compression_ratio").get<double>(), 10.0);
  EXPECT_EQ(j.at("sync").at("steps").get<int>(), 64);
  // The overlay replaced the codec; the user's bucket size split the weights (4 * 50176 bytes) from the rest.
  const std::string text = j.at("toml");
  EXPECT_NE(text.find("name = 'topk'"), std::string::npos) << text;
  EXPECT_NE(text.find("bytes = 100000"), std::string::npos) << text;
  EXPECT_NE(j.at("buckets").get<std::string>().find("topk"), std::string::npos) << j.at("buckets");
  const auto table = r.text.substr(r.text.find("config"));
  EXPECT_NE(table.find("topk-ef"), std::string::npos) << table;
  fs::remove_all(d);
}

// --elastic (docs/elastic.md): rank 2 of 4 SIGKILLs itself before it synchronizes step 5; the 3 others
// agree on a new membership and continue on re-sharded batches, `gradwire run --elastic=1` starts the
// killed rank again, it joins at a step boundary and receives the parameters and the optimizer state, and
// all 4 end at the last step with the same parameters; the run completes and learns.
TEST(TrainCommand, ElasticRunSurvivesAKilledRankThatRejoins) {
  const TempDir d("elastic");
  const fs::path toml = d / "fast.toml";
  std::ofstream(toml) << "[runtime]\ntimeout_s = 5\n";  // a failure is seen within seconds over TCP
  const auto r = run("--ranks 4 --epochs 1 --batch 64 --hidden 256 --train-images 12800 --test-images 1000 "
                     "--evals-per-epoch 2 --configs int8 --elastic 1 --kill-rank 2 --kill-step 5 --config " +
                         toml.string() + " --out " + d.string(),
                     "UCX_TLS=tcp");
  ASSERT_EQ(r.status, 0) << r.text;
  EXPECT_NE(r.text.find("rank 2 kills itself at step 5"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("membership epoch 1"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("joined the job"), std::string::npos) << r.text;
  // Every member's last line: "[r] int8       elastic: rank R of N ended at step S with parameters fnv1a H".
  std::set<unsigned> ranks;
  std::set<std::string> hashes;
  std::istringstream lines(r.text);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("elastic: rank ");
    if (at == std::string::npos) continue;
    unsigned rank = 0, size = 0;
    unsigned long long step = 0;
    char hash[32] = {0};
    ASSERT_EQ(std::sscanf(line.c_str() + at, "elastic: rank %u of %u ended at step %llu with parameters fnv1a %31s", &rank,
                          &size, &step, hash),
              4)
        << line;
    EXPECT_EQ(size, 4u) << line;
    EXPECT_EQ(step, 200u) << line;
    ranks.insert(rank);
    hashes.insert(hash);
  }
  EXPECT_EQ(ranks, (std::set<unsigned>{0, 1, 2, 3})) << r.text;
  EXPECT_EQ(hashes.size(), 1u) << "the members' parameters differ:\n" << r.text;
  std::ifstream in(d / "int8.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("ranks"), 4);
  EXPECT_EQ(j.at("sync").at("steps").get<int>(), 200);
  EXPECT_GE(j.at("curve").back().at("test_accuracy").get<double>(), 0.6) << r.text;
  fs::remove_all(d);
}

// DiLoCo (docs/diloco.md): 16 local steps between outer steps, int8 pseudo-gradients, and streamed in two
// fragments with a delay; both learn, send a small fraction of what per-step averaging would, and report
// the schedule in their configuration.
TEST(TrainCommand, DilocoAndStreamingDiloco) {
  const TempDir d("diloco");
  const auto r = run("--ranks 2 --epochs 1 --batch 64 --hidden 64 --train-images 4096 --test-images 1000 "
                     "--evals-per-epoch 1 --configs diloco-int8,diloco-streaming --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.text;
  for (const char* name : {"diloco-int8", "diloco-streaming"}) {
    std::ifstream in(d / (std::string(name) + ".json"));
    const auto j = nlohmann::json::parse(in);
    const auto& last = j.at("curve").back();
    const double bytes = last.at("bytes").get<double>(), raw = last.at("raw_bytes").get<double>();
    EXPECT_GT(bytes, 0) << name;
    EXPECT_LT(bytes, raw / 16) << name << ": an outer step every 16 steps, int8, should send far less than fp32";
    EXPECT_GE(last.at("test_accuracy").get<double>(), 0.6) << name;
    const std::string text = j.at("toml");
    EXPECT_NE(text.find("name = 'diloco'"), std::string::npos) << text;
  }
  fs::remove_all(d);
}

// --cache: each of 3 ranks loads only its shard of the training set into a data cache and draws its
// batches through gw_cache_get (shuffled over the whole set); it learns like the default path, and the
// cache accounts for the shard held, the storage read once and the samples fetched from other ranks.
TEST(TrainCommand, CacheTrainsFromShards) {
  const TempDir d("cache");
  const auto r = run("--ranks 3 --epochs 2 --batch 60 --hidden 64 --train-images 3000 --test-images 1000 "
                     "--evals-per-epoch 1 --configs none --cache --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.text;
  std::ifstream in(d / "none.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j.at("curve").size(), 2u);
  EXPECT_GE(j["curve"][1]["test_accuracy"].get<double>(), 0.7) << r.text;
  const auto& data = j.at("data");
  EXPECT_TRUE(data.at("cache").is_object()) << data;
  const auto& c = data.at("cache");
  const uint64_t sample = 784 + 1;
  EXPECT_EQ(c.at("bytes_private").get<uint64_t>(), 1000 * sample) << c;  // rank 0's third of 3000
  EXPECT_EQ(data.at("train_bytes_held").get<uint64_t>(), 1000 * sample) << data;
  EXPECT_EQ(c.at("bytes_loaded").get<uint64_t>(), 1001 * sample) << c;   // its shard and one probe sample
  EXPECT_EQ(c.at("gets").get<uint64_t>(), 100u) << c;                   // 50 steps x 2 epochs
  // 20 samples per step, about two thirds of them held by the other ranks.
  const double fetched = c.at("bytes_fetched").get<double>(), local = c.at("bytes_local").get<double>();
  EXPECT_EQ(fetched + local, 100.0 * 20 * sample) << c;
  EXPECT_GT(fetched, 1.5 * local) << c;
  // A parameter server's server ranks draw no batches: refused before any rank starts.
  const auto ps = run("--ranks 2 --epochs 1 --configs ps-sync --cache --out " + d.string());
  EXPECT_NE(ps.status, 0);
  EXPECT_NE(ps.text.find("--cache does not work with the parameter-server configuration 'ps-sync'"), std::string::npos)
      << ps.text;
  fs::remove_all(d);
}

// The parameter-server configurations: the server evaluates the model once every worker finished and its
// figure is the run's final accuracy. In synchronous mode that model is exactly what worker 0 pulled
// last, so both evaluations agree to the last digit; every push is accounted for by the server.
TEST(TrainCommand, ParameterServerReportsTheServersFinalModel) {
  const TempDir d("ps_final");
  const auto r = run("--ranks 2 --epochs 1 --batch 60 --hidden 64 --train-images 3000 --test-images 1000 "
                     "--evals-per-epoch 1 --configs ps-sync,ps-async --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.text;
  for (const std::string config : {"ps-sync", "ps-async"}) {
    std::ifstream in(d / (config + ".json"));
    const auto j = nlohmann::json::parse(in);
    ASSERT_TRUE(j.contains("final_model")) << config << ": " << j.dump(1).substr(0, 2000);
    const auto& f = j.at("final_model");
    const double final_accuracy = f.at("test_accuracy").get<double>();
    EXPECT_GE(final_accuracy, 0.6) << config;
    const auto& server = f.at("server");
    EXPECT_EQ(server.at("pushes").get<uint64_t>() + server.at("dropped").get<uint64_t>(), 100u) << server;  // 2 x 50
    if (config == "ps-sync") {
      EXPECT_EQ(final_accuracy, j.at("curve").back().at("test_accuracy").get<double>());
    }
    EXPECT_FALSE(fs::exists(d / (config + ".final.json"))) << "merged into the result";
  }
  EXPECT_NE(r.text.find("ps-async: test acc is the server's model once every worker finished"), std::string::npos)
      << r.text;
  fs::remove_all(d);
}

TEST(TrainCommand, BadLinkRate) {
  const auto out = run("--link fast --configs none");
  EXPECT_NE(out.status, 0);
  EXPECT_NE(out.text.find("not a link rate"), std::string::npos) << out.text;
}

}  // namespace
