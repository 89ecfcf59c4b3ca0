#include "suites/bench_ranks.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gwcli::bench {

void check_bench(gw_status s, const std::string& what) {
  if (s != GW_OK) throw std::runtime_error(what + ": " + gw_status_string(s) + ": " + gw_last_error());
}

std::vector<float> gaussian_input(uint64_t count, uint32_t seed) {
  std::vector<float> in(count);
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : in) v = d(gen);
  return in;
}

CodecSet::CodecSet(gw_runtime* rt, std::vector<std::string> names, const std::string& suite) : names_(std::move(names)) {
  for (const std::string& name : names_) {
    gw_codec* c = nullptr;
    check_bench(gw_codec_create(rt, name.c_str(), &c), suite + ": gw_codec_create " + name);
    owned_.emplace_back(c);
  }
}

std::vector<std::vector<double>> time_compressed_allreduces(gw_comm* comm, const CodecSet& codecs,
                                                            std::vector<float>& in, std::vector<float>& out,
                                                            int repetitions, const std::string& suite,
                                                            const std::function<void()>& before_round) {
  std::vector<std::vector<double>> seconds(codecs.size());
  gw_tensor x = GW_TENSOR_INIT, y = GW_TENSOR_INIT;
  x.dtype = y.dtype = GW_DTYPE_F32;
  x.data = in.data();
  y.data = out.data();
  x.count = y.count = in.size();
  for (int rep = 0; rep <= repetitions; ++rep) {  // repetition 0: the warm-up
    if (rep > 0 && before_round) before_round();
    for (size_t i = 0; i < codecs.size(); ++i) {
      gw_codec_context ctx = GW_CODEC_CONTEXT_INIT;
      ctx.seed = 7;
      const std::string what = suite + " " + codecs.name(i);
      // The primer: an untimed call of the same codec just before the timed one, so that the timed call
      // finds the connections as a training step does, after a call of its own kind. TCP's congestion
      // state carries from one collective to the next: a ring that followed a sparse allgather (whose
      // incast loses packets at a slow link's switch) ran 20 to 50 % slower than a ring after a ring.
      for (const bool timed : {false, true}) {
        ctx.step = uint64_t(2 * rep + (timed ? 1 : 0));
        check_bench(gw_barrier(comm), what + ": barrier");
        const auto t0 = std::chrono::steady_clock::now();
        check_bench(gw_allreduce_compressed(comm, codecs.codec(i), &ctx, &x, &y, GW_REDUCE_AVG),
                    what + ": compressed allreduce");
        const double s = slowest_rank(comm, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (timed && rep > 0) seconds[i].push_back(s);
      }
    }
  }
  return seconds;
}

double slowest_rank(gw_comm* comm, double mine) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_F64;
  t.data = &mine;
  t.count = 1;
  check_bench(gw_allreduce(comm, &t, &t, GW_REDUCE_MAX), "allreduce of the timings");
  return mine;
}

gw_tensor bytes_tensor(void* data, uint64_t bytes) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = GW_DTYPE_U8;
  t.data = data;
  t.count = bytes;
  return t;
}

nlohmann::json run_rank(const RankSetup& setup, const RankBody& body) {
  gw_runtime_options ro = GW_RUNTIME_OPTIONS_INIT;
  if (!setup.config.empty()) {
    ro.config_path = setup.config.c_str();
  } else if (!setup.config_text.empty()) {
    ro.config_text = setup.config_text.c_str();
  }
  gw_runtime* rt = nullptr;
  check_bench(gw_runtime_create(&ro, &rt), "gw_runtime_create");
  gw_comm* comm = nullptr;
  gw_comm_options co = GW_COMM_OPTIONS_INIT;
  co.timeout_s = setup.timeout_s;
  check_bench(gw_comm_create(rt, &co, &comm), "gw_comm_create");
  nlohmann::json result = body(rt, comm);
  check_bench(gw_comm_destroy(comm), "gw_comm_destroy");
  gw_runtime_destroy(rt);
  return result;
}

namespace {

[[noreturn]] void rank_main(int rank, int n, int port, const Env& env, const RankSetup& setup, const RankBody& body,
                            int result_fd) {
  int code = 0;
  try {
    setenv("GW_RANK", std::to_string(rank).c_str(), 1);
    setenv("GW_WORLD_SIZE", std::to_string(n).c_str(), 1);
    setenv("GW_LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("GW_ROOT_ADDR", "127.0.0.1", 1);
    setenv("GW_ROOT_PORT", std::to_string(port).c_str(), 1);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    const nlohmann::json result = run_rank(setup, body);
    if (rank == 0) {
      const std::string text = result.dump();
      for (size_t done = 0; done < text.size();) {
        const ssize_t w = write(result_fd, text.data() + done, text.size() - done);
        if (w <= 0) break;
        done += size_t(w);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench rank %d: %s\n", rank, e.what());
    code = 1;
  }
  std::fflush(stderr);
  _exit(code);
}

}  // namespace

nlohmann::json run_forked_ranks(int n, const Env& env, const RankSetup& setup, const RankBody& body) {
  const int port = free_port("bench");
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("bench: pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("bench: fork failed");
    if (pid == 0) {
      close(fds[0]);
      rank_main(r, n, port, env, setup, body, fds[1]);
    }
    pids.push_back(pid);
  }
  close(fds[1]);
  std::string text;
  char buf[65536];
  for (ssize_t got; (got = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    text.append(buf, size_t(got));
  }
  close(fds[0]);
  bool failed = false;
  for (pid_t pid : pids) failed = wait_exit(pid) != 0 || failed;
  if (failed || text.empty()) throw std::runtime_error("bench: a rank failed (its message is above)");
  return nlohmann::json::parse(text);
}

int run_captured(const std::vector<std::string>& argv, const Env& env, std::string* out) {
  SpawnOptions options;
  options.env = env;
  if (!out) {
    options.stdout_fd = STDERR_FILENO;
    return run_and_wait(argv, options, "bench");
  }
  int fds[2] = {-1, -1};
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("bench: pipe failed");
  options.stdout_fd = fds[1];
  const pid_t pid = spawn(argv, options, "bench");
  close(fds[1]);
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    out->append(buf, size_t(got));
  }
  close(fds[0]);
  return wait_exit(pid);
}

std::string mpi_peer_path(const std::string& suite, const std::string& program) {
  const std::filesystem::path peer = std::filesystem::path(self_path(suite)).parent_path() / program;
  if (!std::filesystem::exists(peer))
    throw std::runtime_error(suite + ": the MPI peer " + peer.string() +
                             " was not built (Open MPI missing at configure time: Debian openmpi-bin libopenmpi-dev)");
  return peer.string();
}

std::vector<std::string> mpirun_argv() {
  return {"mpirun", "--allow-run-as-root", "--bind-to", "none", "--mca", "rtc_hwloc_vmhole", "none"};
}

nlohmann::json mpi_peer_result(int status, const std::string& output, const std::string& what) {
  const size_t at = output.find("{\"peer\"");
  if (status != 0 || at == std::string::npos)
    throw std::runtime_error(what + " failed (status " + std::to_string(status) + "): " + output);
  return nlohmann::json::parse(output.substr(at, output.find('\n', at) - at));
}

}  // namespace gwcli::bench
