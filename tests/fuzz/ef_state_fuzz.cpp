// libFuzzer target of the error-feedback state blob (gw_error_feedback_load, runtime/ef): what a
// checkpoint on disk gives back. The input's first byte chooses how the rest is used: even, as the blob
// itself; odd, as the blob's body behind a valid header (magic, version, this codec's id) with its
// checksum appended, so the fuzzer reaches the buffer table behind the checksum. The load must answer
// GW_OK, GW_ERR_CORRUPT, GW_ERR_VERSION or GW_ERR_MISMATCH; the state a blob it accepts gives saves to a
// blob that loads back to that same state; a refused one leaves the state unchanged.
#include <gradwire/gradwire.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Setup {
  gw_codec* codec = nullptr;
  gw_error_feedback* ef = nullptr;
  std::vector<unsigned char> initial;  // the state after one encode: a refused load must leave it
  uint32_t codec_id = 0;
};

std::vector<unsigned char> save(gw_error_feedback* ef) {
  uint64_t size = 0;
  if (gw_error_feedback_state_size(ef, &size) != GW_OK) std::abort();
  std::vector<unsigned char> blob(size);
  if (gw_error_feedback_save(ef, blob.data(), blob.size(), &size) != GW_OK || size != blob.size()) std::abort();
  return blob;
}

Setup& setup() {
  static Setup s = [] {
    Setup made;
    gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
    o.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    o.log_level = GW_LOG_ERROR;
    gw_runtime* rt = nullptr;
    if (gw_runtime_create(&o, &rt) != GW_OK || gw_codec_create(rt, "int8", &made.codec) != GW_OK ||
        gw_error_feedback_create(made.codec, &made.ef) != GW_OK) {
      std::fprintf(stderr, "fuzz setup: %s\n", gw_last_error());
      std::abort();
    }
    std::vector<float> x(37);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.37f - 5.0f;
    gw_tensor t = GW_TENSOR_INIT;
    t.data = x.data();
    t.count = x.size();
    uint64_t cap = 0, written = 0;
    gw_codec_max_encoded_size(made.codec, GW_DTYPE_F32, t.count, &cap);
    std::vector<unsigned char> payload(cap);
    if (gw_error_feedback_encode(made.ef, 3, nullptr, &t, payload.data(), cap, &written) != GW_OK) std::abort();
    made.initial = save(made.ef);
    std::memcpy(&made.codec_id, made.initial.data() + 8, 4);
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Setup& s = setup();
  std::vector<unsigned char> blob;
  if (data[0] & 1) {
    put(blob, 0x46455747u, 4);  // "GWEF"
    put(blob, 1, 4);
    put(blob, s.codec_id, 4);
    blob.insert(blob.end(), data + 1, data + size);
    put(blob, fnv1a64(blob.data(), blob.size()), 8);
  } else {
    blob.assign(data + 1, data + size);
  }
  const gw_status st = gw_error_feedback_load(s.ef, blob.data(), blob.size());
  if (st == GW_OK) {
    const std::vector<unsigned char> saved = save(s.ef);
    if (gw_error_feedback_load(s.ef, saved.data(), saved.size()) != GW_OK || save(s.ef) != saved) {
      std::fprintf(stderr, "finding: the state of an accepted blob does not survive save and load\n");
      std::abort();
    }
    if (gw_error_feedback_load(s.ef, s.initial.data(), s.initial.size()) != GW_OK) std::abort();
  } else if (st == GW_ERR_CORRUPT || st == GW_ERR_VERSION || st == GW_ERR_MISMATCH) {
    if (save(s.ef) != s.initial) {
      std::fprintf(stderr, "finding: a refused blob (%s) changed the state\n", gw_status_string(st));
      std::abort();
    }
  } else {
    std::fprintf(stderr, "finding: unexpected status %s: %s\n", gw_status_string(st), gw_last_error());
    std::abort();
  }
  return 0;
}
