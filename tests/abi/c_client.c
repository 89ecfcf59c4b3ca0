/* A plain C99 application: creates a runtime, round-trips a buffer through a codec (argv[1], default
 * "none") and checks every status and that no value moved by more than argv[2] (default 0), as the
 * smallest user of the C ABI would. */
#include <gradwire/gradwire.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                              \
  do {                                                                           \
    gw_status s_ = (call);                                                       \
    if (s_ != GW_OK) {                                                           \
      fprintf(stderr, "%s failed: %s: %s\n", #call, gw_status_string(s_), gw_last_error()); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "none";
  const double tolerance = argc > 2 ? atof(argv[2]) : 0.0;
  int i;
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  gw_runtime* rt = NULL;
  gw_codec* codec = NULL;
  float in[5] = {1.0f, -2.5f, 3.0f, 0.0f, 1e-3f}, out[5];
  gw_tensor t = GW_TENSOR_INIT;
  unsigned char payload[128];
  uint64_t size = 0;

  CHECK(gw_runtime_create(&options, &rt));
  CHECK(gw_codec_create(rt, name, &codec));
  t.data = in;
  t.count = 5;
  CHECK(gw_codec_encode(codec, NULL, &t, payload, sizeof payload, &size));
  t.data = out;
  CHECK(gw_codec_decode(codec, NULL, payload, size, &t, 0));
  CHECK(gw_codec_destroy(codec));
  CHECK(gw_runtime_destroy(rt));
  for (i = 0; i < 5; ++i) {
    if (fabs((double)in[i] - (double)out[i]) > tolerance) {
      fprintf(stderr, "%s: value %d came back as %g instead of %g\n", name, i, (double)out[i], (double)in[i]);
      return 1;
    }
  }
  printf("ok: codec %s through gradwire %s, ABI %u.%u\n", name, gw_version_string(), gw_abi_version_major(),
         gw_abi_version_minor());
  return 0;
}
