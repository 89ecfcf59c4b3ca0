// One rank of the elastic-membership tests (docs/elastic.md), started by `gradwire run -n N --keep-going
// -- elastic_rank STEPS FAULT VICTIMS TAG`: every rank runs STEPS steps of a gw_sync_step loop (int8 with
// error feedback, the every_step schedule, [elastic] enabled, min_ranks ELASTIC_MIN_RANKS, default 1) and
// applies plain SGD to its parameters. Gradients depend on the parameters, the rank, the size and the
// step, so a member whose state differs from the others' shows in the final hash. ELASTIC_SCHEDULE
// (default every_step) names another schedule: local_sgd (period 4) or diloco (inner_steps 4), whose
// steps between two averagings communicate nothing; the replicas differ there, so the hash is then of the
// parameters as the last averaging (or outer step) left them, before the rank's own update, and of that
// step's number. On each rank named in
// VICTIMS (comma-separated) a second thread injects FAULT (kill: SIGKILL, stop: SIGSTOP; none) FAULT_DELAY_MS
// (default 20) after the main thread entered step FAULT_AT (default 3). ELASTIC_STEP_SLEEP_MS (default 0)
// before every step (before the fault's delay starts) keeps the loop running longer. TAG only marks the processes.
// On rank ELASTIC_SQUAT_CONTACT (when set) a socket tries to take the join contact's port (GW_ELASTIC_PORT)
// before the communicator exists, as another job's launcher or rendezvous root could: bound without
// SO_REUSEADDR on every interface, and listening there for the rest of the process when that worked.
//
// What it prints (elastic_test.cpp parses it):
//   "FAULT <fault> pid <pid> at <wall seconds>"                      a victim, just before the fault
//   "START pid <pid> at <wall seconds>"                              the loop begins
//   "CHANGED epoch <e> rank <r> size <n> steps <s> at <wall seconds> lost <l>"
//                                        gw_sync_step said GW_MEMBERSHIP_CHANGED: continue from step s, l
//                                        steps this rank had completed were undone
//   "RESUMED at <wall seconds> steps <s>"                            the first step completed after a change
//   "EXPECTED-ERROR <status> at <wall seconds> step <s>: <message>"   a step that failed: the loop ends
//   "JOINED epoch <e> rank <r> size <n> steps <s> at <wall seconds>"  a restarted process was admitted
//   "SQUAT took <port>" / "SQUAT refused <port>"                      ELASTIC_SQUAT_CONTACT: the port was free / held
//   "DONE steps <s> rank <r> size <n> epoch <e> hash <hex>"           after STEPS completed steps
//   "DESTROYED <status>"                                              after gw_sync/gw_comm/gw_runtime destroy
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "../faults/common.hpp"

using namespace faults;

namespace {

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// ELASTIC_SQUAT_CONTACT: binds GW_ELASTIC_PORT as a socket of another program would (no SO_REUSEADDR, every
// interface) and listens there; the descriptor stays open until the process exits. Says whether it could.
void squat_contact() {
  const int port = std::atoi(env_or("GW_ELASTIC_PORT", "0").c_str());
  if (port <= 0) die("ELASTIC_SQUAT_CONTACT needs GW_ELASTIC_PORT (gradwire run --elastic)");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(uint16_t(port));
  const bool took = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd, 4) == 0;
  say(std::string("SQUAT ") + (took ? "took " : "refused ") + std::to_string(port));
}

std::set<int> parse_list(const std::string& s) {
  std::set<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.insert(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) die("usage: elastic_rank STEPS FAULT VICTIMS TAG");
  init_rank_from_env();
  const uint64_t steps = std::strtoull(argv[1], nullptr, 10);
  const std::string fault = argv[2];
  const std::set<int> victims = parse_list(argv[3]);
  const int fault_at = std::atoi(env_or("FAULT_AT", "3").c_str());
  const int delay_ms = std::atoi(env_or("FAULT_DELAY_MS", "20").c_str());
  const int step_sleep_ms = std::atoi(env_or("ELASTIC_STEP_SLEEP_MS", "0").c_str());
  const bool victim = fault != "none" && victims.count(g_rank) > 0;
  if (const std::string squat = env_or("ELASTIC_SQUAT_CONTACT", ""); !squat.empty() && std::atoi(squat.c_str()) == g_rank &&
      env_or("GW_ELASTIC_JOIN", "") != "1")
    squat_contact();

  const std::string schedule = env_or("ELASTIC_SCHEDULE", "every_step");
  const bool every_step = schedule == "every_step";
  const std::string schedule_keys = schedule == "local_sgd" ? "[schedule.local_sgd]\nperiod = 4\n"
                                    : schedule == "diloco"  ? "[schedule.diloco]\ninner_steps = 4\n"
                                                            : "";
  gw_runtime* rt = make_runtime("[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"" + schedule +
                                "\"\n" + schedule_keys + "[elastic]\nenabled = true\nmin_ranks = " +
                                env_or("ELASTIC_MIN_RANKS", "1") + "\n");
  // A process `gradwire run --elastic` started again joins the running job: its rank is what the
  // members give it, not GW_RANK.
  const bool joiner = env_or("GW_ELASTIC_JOIN", "") == "1";
  gw_comm* comm = nullptr;
  if (joiner) {
    gw_comm_options co = GW_COMM_OPTIONS_INIT;
    check(gw_comm_create(rt, &co, &comm), "gw_comm_create (joining)");
  } else {
    comm = make_comm(rt);
  }
  gw_sync_options so = GW_SYNC_OPTIONS_INIT;
  so.runtime = rt;
  gw_sync* sync = nullptr;
  check(gw_sync_create(comm, &so, &sync), "gw_sync_create");
  const size_t counts[2] = {size_t(1) << 18, 1000};
  std::vector<float> params[2], grads[2];
  gw_tensor gt[2], pt[2];
  for (int t = 0; t < 2; ++t) {
    params[t].resize(counts[t]);
    grads[t].resize(counts[t]);
    for (size_t i = 0; i < counts[t]; ++i) params[t][i] = 0.1f * std::sin(float(i) * 0.37f + float(t));
    gt[t] = tensor(GW_DTYPE_F32, grads[t].data(), counts[t]);
    pt[t] = tensor(GW_DTYPE_F32, params[t].data(), counts[t]);
    check(gw_sync_register(sync, t == 0 ? "w1" : "w2", &gt[t], &pt[t]), "gw_sync_register");
  }
  check(gw_sync_finalize(sync), "gw_sync_finalize");
  uint64_t done = 0;  // completed steps, as the synchronizer counts them
  if (joiner) {
    gw_sync_stats stats = {};
    stats.struct_size = sizeof stats;
    check(gw_sync_get_stats(sync, GW_SYNC_ALL_BUCKETS, &stats), "gw_sync_get_stats");
    done = stats.steps;
    char line[256];
    std::snprintf(line, sizeof line, "JOINED epoch %llu rank %u size %u steps %llu at %.6f",
                  (unsigned long long)gw_comm_membership_epoch(comm), gw_comm_rank(comm), gw_comm_size(comm),
                  (unsigned long long)done, wall_seconds());
    say(line);
  }

  // Not every_step: the hash of the parameters the last averaging left (equal on every rank), and its step.
  uint64_t synced_hash = 0;
  std::thread injector;
  say("START pid " + std::to_string(getpid()) + " at " + std::to_string(wall_seconds()));
  bool resumed = true;  // false from a membership change to the next completed step
  std::atomic<bool> fault_armed{joiner};  // a restarted victim does not fault again
  while (done < steps) {
    const uint32_t rank = gw_comm_rank(comm), size = gw_comm_size(comm);
    for (int t = 0; t < 2; ++t)
      for (size_t i = 0; i < counts[t]; ++i)
        grads[t][i] = 0.05f * params[t][i] + float(int((i * 7 + rank * 13 + done * 5) % 17) - 8) * 0.01f / float(size);
    if (step_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(step_sleep_ms));
    if (victim && int(done) == fault_at && !fault_armed.exchange(true)) {
      injector = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        say("FAULT " + fault + " pid " + std::to_string(getpid()) + " at " + std::to_string(wall_seconds()));
        raise(fault == "kill" ? SIGKILL : SIGSTOP);
      });
    }
    uint32_t flags = 0;
    const gw_status st = gw_sync_step(sync, &flags);
    if (st == GW_MEMBERSHIP_CHANGED) {
      gw_sync_stats stats = {};
      stats.struct_size = sizeof stats;
      check(gw_sync_get_stats(sync, GW_SYNC_ALL_BUCKETS, &stats), "gw_sync_get_stats");
      const uint64_t before = done;
      done = stats.steps;
      char line[256];
      std::snprintf(line, sizeof line, "CHANGED epoch %llu rank %u size %u steps %llu at %.6f lost %llu",
                    (unsigned long long)gw_comm_membership_epoch(comm), gw_comm_rank(comm), gw_comm_size(comm),
                    (unsigned long long)done, wall_seconds(), (unsigned long long)(before - done));
      say(line);
      resumed = false;
      continue;
    }
    if (st != GW_OK) {
      say(std::string("EXPECTED-ERROR ") + gw_status_string(st) + " at " + std::to_string(wall_seconds()) + " step " +
          std::to_string(done) + ": " + gw_last_error());
      break;
    }
    if (every_step && !(flags & GW_SYNC_GRADIENTS_AVERAGED)) die("a step without averaged gradients");
    if (flags & (GW_SYNC_PARAMETERS_AVERAGED | GW_SYNC_OUTER_STEP)) {
      synced_hash = fnv1a(params[0].data(), params[0].size() * 4);
      synced_hash = fnv1a(params[1].data(), params[1].size() * 4, synced_hash);
      synced_hash = fnv1a(&done, sizeof done, synced_hash);
    }
    for (int t = 0; t < 2; ++t)
      for (size_t i = 0; i < counts[t]; ++i) params[t][i] -= 0.5f * grads[t][i];
    ++done;
    if (!resumed) {
      resumed = true;
      say("RESUMED at " + std::to_string(wall_seconds()) + " steps " + std::to_string(done));
    }
  }
  if (done >= steps) {
    uint64_t h = synced_hash;
    if (every_step) {
      h = fnv1a(params[0].data(), params[0].size() * 4);
      h = fnv1a(params[1].data(), params[1].size() * 4, h);
    }
    char line[256];
    std::snprintf(line, sizeof line, "DONE steps %llu rank %u size %u epoch %llu hash %016llx", (unsigned long long)done,
                  gw_comm_rank(comm), gw_comm_size(comm), (unsigned long long)gw_comm_membership_epoch(comm),
                  (unsigned long long)h);
    say(line);
  }
  if (injector.joinable()) injector.join();
  const gw_status a = gw_sync_destroy(sync);
  const gw_status b = gw_comm_destroy(comm);
  const gw_status c = gw_runtime_destroy(rt);
  say(std::string("DESTROYED ") + gw_status_string(a != GW_OK ? a : b != GW_OK ? b : c));
  return 0;
}
