/*
 * minmax8 — an example gradwire codec plugin in plain C99 (docs/plugin-guide.md explains it line by line).
 *
 * Each block of `block` fp32 values is sent as its minimum and maximum (two fp32) and one byte per value:
 * q = round((x - min) / (max - min) * 255). Lossy, dense, not summable: the runtime decodes, adds and
 * re-encodes at each chunk's owner. Error per value: at most (max - min) / 510 of its block.
 *
 * Body (little-endian): for each block, f32 min, f32 max, then the block's bytes; the last block may be
 * shorter. Size: n + 8 * ceil(n / block).
 */
#include <gradwire/plugin_codec.h> /* a codec needs only its kind's header (plugin.h has every kind) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct minmax8 {
  const gw_host* host;
  uint64_t block;
} minmax8;

/* The one key this codec has, declared once: the runtime parses, checks, documents and dumps it. */
static const gw_config_key minmax8_keys[] = {
    {sizeof(gw_config_key), "block", GW_CONFIG_INT, "1024", "Values sharing one min/max pair.", 16.0, 1048576.0, NULL}};

static gw_status fail(const minmax8* self, gw_status status, const char* message) {
  self->host->set_error(self->host->ctx, message);
  return status;
}

static gw_status mm_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  int64_t block = 0;
  minmax8* self;
  gw_status status;
  (void)plugin_state;
  status = host->config_get_int(config, "block", &block);
  if (status != GW_OK) return status;
  self = (minmax8*)malloc(sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  self->block = (uint64_t)block;
  *out = self;
  return GW_OK;
}

static void mm_destroy(void* codec) { free(codec); }

static gw_status mm_properties(void* codec, gw_codec_properties* out) {
  (void)codec;
  out->flags = 0; /* lossy, dense, not summable */
  out->sum_dtype = GW_DTYPE_F32;
  out->dtypes = 1u << GW_DTYPE_F32;
  return GW_OK;
}

static uint64_t body_size(const minmax8* self, uint64_t n) { return n + 8 * ((n + self->block - 1) / self->block); }

static gw_status mm_max_encoded_size(void* codec, gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* workspace) {
  const minmax8* self = (const minmax8*)codec;
  if (dtype != GW_DTYPE_F32) return fail(self, GW_ERR_UNSUPPORTED, "minmax8 encodes f32 only");
  *body = body_size(self, count);
  *workspace = 0;
  return GW_OK;
}

static void put_f32(unsigned char* p, float v) {
  uint32_t u;
  int i;
  memcpy(&u, &v, 4);
  for (i = 0; i < 4; ++i) p[i] = (unsigned char)(u >> (8 * i));
}

static float get_f32(const unsigned char* p) {
  uint32_t u = 0;
  float v;
  int i;
  for (i = 0; i < 4; ++i) u |= (uint32_t)p[i] << (8 * i);
  memcpy(&v, &u, 4);
  return v;
}

static gw_status mm_encode(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body, uint64_t capacity,
                           uint64_t* size) {
  const minmax8* self = (const minmax8*)codec;
  const float* x = (const float*)in->data;
  unsigned char* out = (unsigned char*)body;
  uint64_t start;
  (void)ctx;
  if (capacity < body_size(self, in->count)) return fail(self, GW_ERR_BUFFER_TOO_SMALL, "minmax8: body capacity too small");
  for (start = 0; start < in->count; start += self->block) {
    const uint64_t len = in->count - start < self->block ? in->count - start : self->block;
    float lo = x[start], hi = x[start];
    float scale;
    uint64_t i;
    for (i = 1; i < len; ++i) {
      lo = x[start + i] < lo ? x[start + i] : lo;
      hi = x[start + i] > hi ? x[start + i] : hi;
    }
    if (!isfinite(lo) || !isfinite(hi)) return fail(self, GW_ERR_INVALID_ARGUMENT, "minmax8: the input holds NaN or Inf");
    put_f32(out, lo);
    put_f32(out + 4, hi);
    out += 8;
    scale = hi > lo ? 255.0f / (hi - lo) : 0.0f;
    for (i = 0; i < len; ++i) out[i] = (unsigned char)lrintf((x[start + i] - lo) * scale);
    out += len;
  }
  *size = (uint64_t)(out - (unsigned char*)body);
  return GW_OK;
}

static gw_status mm_decode(void* codec, const gw_codec_context* ctx, const void* body, uint64_t size, gw_tensor* out,
                           uint32_t flags) {
  const minmax8* self = (const minmax8*)codec;
  const unsigned char* p = (const unsigned char*)body;
  float* y = (float*)out->data;
  uint64_t start;
  (void)ctx;
  /* Check every length before reading: a corrupt payload is an error, never an out-of-bounds read. */
  if (size != body_size(self, out->count))
    return fail(self, GW_ERR_CORRUPT, "minmax8: body length does not match the element count and block size "
                                      "(do all ranks use the same [codec.minmax8] block?)");
  for (start = 0; start < out->count; start += self->block) {
    const uint64_t len = out->count - start < self->block ? out->count - start : self->block;
    const float lo = get_f32(p), hi = get_f32(p + 4);
    const float step = (hi - lo) / 255.0f;
    uint64_t i;
    if (!(hi >= lo) || !isfinite(lo) || !isfinite(hi)) return fail(self, GW_ERR_CORRUPT, "minmax8: a block's range is invalid");
    p += 8;
    for (i = 0; i < len; ++i) {
      const float v = lo + (float)p[i] * step;
      y[start + i] = (flags & GW_DECODE_ACCUMULATE) ? y[start + i] + v : v;
    }
    p += len;
  }
  return GW_OK;
}

static const gw_codec_vtable minmax8_vtable = {sizeof(gw_codec_vtable), mm_create, mm_destroy, mm_properties,
                                               mm_max_encoded_size, mm_encode, mm_decode, NULL,
                                               NULL, NULL, NULL, NULL /* 1.4: rounds and state, unused */};

static const gw_component minmax8_components[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "minmax8", "8-bit min-max quantization per block (an example plugin).",
     minmax8_keys, 1, &minmax8_vtable}};

static const gw_plugin_descriptor minmax8_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "minmax8", "1.0.0",
    "An out-of-tree example codec written in C99.", NULL, NULL, minmax8_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &minmax8_descriptor : NULL;
}
