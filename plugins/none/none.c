/* The lossless codec "none": the body is the input's bytes, unchanged. It is the default codec and the
 * reference every other codec's results are compared with. */
#include <gradwire/plugin.h>

#include <string.h>

#define ALL_DTYPES                                                                                       \
  ((1u << GW_DTYPE_F32) | (1u << GW_DTYPE_F64) | (1u << GW_DTYPE_F16) | (1u << GW_DTYPE_BF16) |         \
   (1u << GW_DTYPE_I32) | (1u << GW_DTYPE_I64) | (1u << GW_DTYPE_U8))

typedef struct none_codec {
  const gw_host* host;
} none_codec;

static uint64_t dtype_size(gw_dtype dtype) {
  switch (dtype) {
    case GW_DTYPE_F32: case GW_DTYPE_I32: return 4;
    case GW_DTYPE_F64: case GW_DTYPE_I64: return 8;
    case GW_DTYPE_F16: case GW_DTYPE_BF16: return 2;
    case GW_DTYPE_U8: return 1;
    default: return 0;
  }
}

static gw_status none_create(void* plugin_state, const gw_host* host, const gw_config* config, void** codec) {
  static none_codec instance;
  (void)plugin_state;
  (void)config;
  instance.host = host;
  *codec = &instance; /* stateless: one shared instance */
  return GW_OK;
}

static void none_destroy(void* codec) { (void)codec; }

static gw_status none_properties(void* codec, gw_codec_properties* out) {
  (void)codec;
  out->flags = GW_CODEC_LOSSLESS | GW_CODEC_SUMMABLE;
  out->sum_dtype = GW_DTYPE_F32;
  out->dtypes = ALL_DTYPES;
  return GW_OK;
}

static gw_status none_max_encoded_size(void* codec, gw_dtype dtype, uint64_t count, uint64_t* body_bytes,
                                       uint64_t* workspace_bytes) {
  const none_codec* self = (const none_codec*)codec;
  const uint64_t size = dtype_size(dtype);
  if (size == 0) {
    self->host->set_error(self->host->ctx, "none: unknown dtype");
    return GW_ERR_INVALID_ARGUMENT;
  }
  if (count > UINT64_MAX / size) {
    self->host->set_error(self->host->ctx, "none: element count overflows a 64-bit byte size");
    return GW_ERR_INVALID_ARGUMENT;
  }
  *body_bytes = count * size;
  *workspace_bytes = 0;
  return GW_OK;
}

static gw_status none_encode(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body,
                             uint64_t body_capacity, uint64_t* body_size) {
  const none_codec* self = (const none_codec*)codec;
  const uint64_t bytes = in->count * dtype_size(in->dtype);
  (void)ctx;
  if (bytes > body_capacity) {
    self->host->set_error(self->host->ctx, "none: output buffer too small; size it with max_encoded_size");
    return GW_ERR_BUFFER_TOO_SMALL;
  }
  if (bytes) memcpy(body, in->data, (size_t)bytes);
  *body_size = bytes;
  return GW_OK;
}

#define ACCUMULATE(T)                                            \
  do {                                                           \
    T* o = (T*)out->data;                                        \
    uint64_t i;                                                  \
    for (i = 0; i < out->count; ++i) {                           \
      T v;                                                       \
      memcpy(&v, (const unsigned char*)body + i * sizeof(T), sizeof(T)); \
      o[i] += v;                                                 \
    }                                                            \
  } while (0)

static gw_status none_decode(void* codec, const gw_codec_context* ctx, const void* body, uint64_t body_size,
                             gw_tensor* out, uint32_t flags) {
  const none_codec* self = (const none_codec*)codec;
  const uint64_t bytes = out->count * dtype_size(out->dtype);
  (void)ctx;
  if (body_size != bytes) {
    self->host->set_error(self->host->ctx, "none: body length does not equal count * element size");
    return GW_ERR_CORRUPT;
  }
  if (!(flags & GW_DECODE_ACCUMULATE)) {
    if (bytes) memcpy(out->data, body, (size_t)bytes);
    return GW_OK;
  }
  switch (out->dtype) {
    case GW_DTYPE_F32: ACCUMULATE(float); break;
    case GW_DTYPE_F64: ACCUMULATE(double); break;
    case GW_DTYPE_I32: ACCUMULATE(int32_t); break;
    case GW_DTYPE_I64: ACCUMULATE(int64_t); break;
    case GW_DTYPE_U8: ACCUMULATE(uint8_t); break;
    default:
      self->host->set_error(self->host->ctx, "none: accumulating decode supports f32, f64, i32, i64 and u8; "
                                             "use a codec with fp16/bf16 arithmetic (fp16, bf16) for those");
      return GW_ERR_UNSUPPORTED;
  }
  return GW_OK;
}

static const gw_codec_vtable none_vtable = {
    sizeof(gw_codec_vtable), none_create, none_destroy, none_properties, none_max_encoded_size,
    none_encode, none_decode, NULL};

static const gw_component none_components[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, "none", "Lossless: sends the buffer unchanged.", NULL, 0,
     &none_vtable}};

static const gw_plugin_descriptor none_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "none", "1.0.0",
    "The uncompressed codec.", NULL, NULL, none_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &none_descriptor : NULL;
}
