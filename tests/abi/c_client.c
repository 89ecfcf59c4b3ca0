/* A plain C99 application: creates a runtime, round-trips a buffer through the `none` codec and
 * checks every status, as the smallest user of the C ABI would. */
#include <gradwire/gradwire.h>

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    gw_status s_ = (call);                                                       \
    if (s_ != GW_OK) {                                                           \
      fprintf(stderr, "%s failed: %s: %s\n", #call, gw_status_string(s_), gw_last_error()); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main(void) {
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  gw_runtime* rt = NULL;
  gw_codec* codec = NULL;
  float in[5] = {1.0f, -2.5f, 3.0f, 0.0f, 1e-3f}, out[5];
  gw_tensor t = GW_TENSOR_INIT;
  unsigned char payload[128];
  uint64_t size = 0;

  CHECK(gw_runtime_create(&options, &rt));
  CHECK(gw_codec_create(rt, "none", &codec));
  t.data = in;
  t.count = 5;
  CHECK(gw_codec_encode(codec, NULL, &t, payload, sizeof payload, &size));
  t.data = out;
  CHECK(gw_codec_decode(codec, NULL, payload, size, &t, 0));
  CHECK(gw_codec_destroy(codec));
  CHECK(gw_runtime_destroy(rt));
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "round trip changed the data\n");
    return 1;
  }
  printf("ok: gradwire %s, ABI %u.%u\n", gw_version_string(), gw_abi_version_major(), gw_abi_version_minor());
  return 0;
}
