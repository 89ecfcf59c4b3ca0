// libFuzzer target for the sparse decoders: the input is a codec body; the decoded tensor has
// 1 + input[0] elements (so indices can fall in and out of range). Build with -DGW_FUZZ_CODEC="topk",
// "randomk" or "sparseq". The decoder must return GW_OK or GW_ERR_CORRUPT, never read or write out of bounds
// (ASan checks that).
#include <gradwire/gradwire.h>
#include <gradwire/plugin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

gw_codec* codec() {
  static gw_codec* c = [] {
    gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
    o.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    o.log_level = GW_LOG_ERROR;
    gw_runtime* rt = nullptr;
    gw_codec* made = nullptr;
    if (gw_runtime_create(&o, &rt) != GW_OK || gw_codec_create(rt, GW_FUZZ_CODEC, &made) != GW_OK) {
      std::fprintf(stderr, "fuzz setup: %s\n", gw_last_error());
      std::abort();
    }
    return made;
  }();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint64_t n = 1 + data[0];
  const uint64_t body = size - 1;
  std::vector<uint8_t> payload(GW_WIRE_HEADER_SIZE + body);
  gw_wire_header h{};
  h.magic = GW_WIRE_MAGIC;
  h.format_version = GW_WIRE_FORMAT_VERSION;
  h.codec_id = 0;
  h.dtype = GW_DTYPE_F32;
  h.count = n;
  h.body_length = body;
  // The header is the runtime's; take a valid one from an encode, then replace the body.
  std::vector<float> x(n, 1.0f), out(n);
  gw_tensor t = GW_TENSOR_INIT;
  t.data = x.data();
  t.count = n;
  uint64_t cap = 0, written = 0;
  if (gw_codec_max_encoded_size(codec(), GW_DTYPE_F32, n, &cap) != GW_OK) std::abort();
  std::vector<uint8_t> valid(cap);
  if (gw_codec_encode(codec(), nullptr, &t, valid.data(), cap, &written) != GW_OK) std::abort();
  std::memcpy(payload.data(), valid.data(), GW_WIRE_HEADER_SIZE);
  std::memcpy(payload.data() + 24, &h.body_length, 8);
  if (body) std::memcpy(payload.data() + GW_WIRE_HEADER_SIZE, data + 1, body);
  t.data = out.data();
  const gw_status s = gw_codec_decode(codec(), nullptr, payload.data(), payload.size(), &t, 0);
  if (s != GW_OK && s != GW_ERR_CORRUPT) {
    std::fprintf(stderr, "unexpected status %d: %s\n", static_cast<int>(s), gw_last_error());
    std::abort();
  }
  return 0;
}
