// libFuzzer target of the synchronizer's checkpoint blob (gw_sync_load_state, runtime/sync/state.cpp;
// the schedule's own state and the error-feedback blobs inside it too): what a checkpoint on disk gives
// back. A one-rank communicator (the rendezvous through a callback) and a synchronizer with the async
// schedule, int8 with error feedback and two buckets, a few steps in. The input's first byte chooses how
// the rest is used: even, as the blob itself; odd, as the blob's body behind a valid header with its
// checksum appended, so the fuzzer reaches the sections behind the checksum. The load must answer
// GW_OK, GW_ERR_CORRUPT, GW_ERR_VERSION or GW_ERR_MISMATCH, and a refused one leaves the state
// unchanged; after an accepted one, a step answers GW_OK or an error with a message, and the initial
// blob loads again.
#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

gw_status copy_allgather(void*, const void* in, uint64_t bytes, void* out) {
  std::memcpy(out, in, bytes);
  return GW_OK;
}

[[noreturn]] void setup_failed(const char* what) {
  std::fprintf(stderr, "fuzz setup: %s: %s\n", what, gw_last_error());
  std::abort();
}

struct Setup {
  gw_sync* sync = nullptr;
  std::vector<float> a = std::vector<float>(64), b = std::vector<float>(200);
  std::vector<unsigned char> initial;
};

std::vector<unsigned char> save(gw_sync* sync) {
  uint64_t size = 0;
  if (gw_sync_save_state(sync, nullptr, 0, &size) != GW_OK) setup_failed("gw_sync_save_state (size)");
  std::vector<unsigned char> blob(size);
  if (gw_sync_save_state(sync, blob.data(), blob.size(), &size) != GW_OK) setup_failed("gw_sync_save_state");
  blob.resize(size);
  return blob;
}

Setup& setup() {
  static Setup s = [] {
    Setup made;
    const char* toml =
        "[runtime]\ntimeout_s = 30\n[codec]\nname = \"int8\"\nerror_feedback = true\n[bucket]\nbytes = 512\n"
        "[schedule]\nname = \"async\"\n[schedule.async]\nstaleness = 2\n";
    gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
    o.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    o.log_level = GW_LOG_ERROR;
    o.config_text = toml;
    gw_runtime* rt = nullptr;
    if (gw_runtime_create(&o, &rt) != GW_OK) setup_failed("gw_runtime_create");
    gw_comm_options co = GW_COMM_OPTIONS_INIT;
    co.rank = 0;
    co.world_size = 1;
    co.local_rank = 0;
    co.allgather = copy_allgather;
    gw_comm* comm = nullptr;
    if (gw_comm_create(rt, &co, &comm) != GW_OK) setup_failed("gw_comm_create");
    gw_sync_options so = GW_SYNC_OPTIONS_INIT;
    so.runtime = rt;
    if (gw_sync_create(comm, &so, &made.sync) != GW_OK) setup_failed("gw_sync_create");
    gw_tensor ta = GW_TENSOR_INIT, tb = GW_TENSOR_INIT;
    ta.data = made.a.data();
    ta.count = made.a.size();
    tb.data = made.b.data();
    tb.count = made.b.size();
    if (gw_sync_register(made.sync, "a", &ta, nullptr) != GW_OK || gw_sync_register(made.sync, "b", &tb, nullptr) != GW_OK ||
        gw_sync_finalize(made.sync) != GW_OK)
      setup_failed("gw_sync_register/finalize");
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < made.a.size(); ++i) made.a[i] = float(int(i + step) % 9) - 4.0f;
      for (size_t i = 0; i < made.b.size(); ++i) made.b[i] = float(int(i * 3 + step) % 7) * 0.25f;
      if (gw_sync_step(made.sync, nullptr) != GW_OK) setup_failed("gw_sync_step");
    }
    made.initial = save(made.sync);
    if (const char* seed = std::getenv("GW_FUZZ_WRITE_SEED")) {  // how the committed seed was made
      FILE* f = std::fopen(seed, "wb");
      if (f) {
        const unsigned char raw = 0;
        std::fwrite(&raw, 1, 1, f);
        std::fwrite(made.initial.data(), 1, made.initial.size(), f);
        std::fclose(f);
      }
    }
    return made;
  }();
  return s;
}

uint64_t fnv1a64(const unsigned char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void put(std::vector<unsigned char>& v, uint64_t x, int n) {
  for (int i = 0; i < n; ++i) v.push_back(uint8_t(x >> (8 * i)));
}

[[noreturn]] void finding(const char* what, gw_status st) {
  std::fprintf(stderr, "finding: %s (%s: %s)\n", what, gw_status_string(st), gw_last_error());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Setup& s = setup();
  std::vector<unsigned char> blob;
  if (data[0] & 1) {
    put(blob, 0x59535747u, 4);  // "GWSY"
    put(blob, 1, 4);
    blob.insert(blob.end(), data + 1, data + size);
    put(blob, fnv1a64(blob.data(), blob.size()), 8);
  } else {
    blob.assign(data + 1, data + size);
  }
  const gw_status st = gw_sync_load_state(s.sync, blob.data(), blob.size());
  if (st == GW_OK) {
    // The checksum guards against damage; a crafted blob with a valid checksum may still disagree with
    // itself (e.g. background slots the schedule's state does not list). The step after it must then
    // fail cleanly, with a status and a message, and the synchronizer must take a good blob again.
    uint32_t flags = 0;
    const gw_status stepped = gw_sync_step(s.sync, &flags);
    if (stepped != GW_OK && (stepped > 0 || std::strlen(gw_last_error()) == 0))
      finding("a step after an accepted blob failed without an error status and message", stepped);
    const gw_status back = gw_sync_load_state(s.sync, s.initial.data(), s.initial.size());
    if (back != GW_OK) finding("the initial blob no longer loads", back);
  } else if (st == GW_ERR_CORRUPT || st == GW_ERR_VERSION || st == GW_ERR_MISMATCH) {
    if (save(s.sync) != s.initial) finding("a refused blob changed the state", st);
  } else {
    finding("unexpected status", st);
  }
  return 0;
}
