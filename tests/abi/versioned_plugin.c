/* A plugin whose every extensible struct is either this header's version (GW_TEST_FUTURE 0: a plugin
 * built with the same header as the host) or larger than the host's (GW_TEST_FUTURE 1: a plugin built
 * with a later header whose structs grew). The future build puts members the host does not know after
 * each struct: data set to a poison pattern and function pointers to a function that aborts, so a host
 * that reads past its own version of a struct, or strides a plugin array by its own sizeof, fails the
 * test. Components: a lossless f32 codec (<prefix>_copy, key "level"), a schedule that averages every
 * step (<prefix>_every), a one-rank transport (<prefix>_loop). Used by tests/abi/struct_versions.c. */
#include <gradwire/plugin.h>

#include <stdlib.h>
#include <string.h>

#if GW_TEST_FUTURE
#define PREFIX "abifut"
#define FUTURE_TAIL \
  uint64_t future_value; \
  void (*future_fn)(void);
#else
#define PREFIX "abiv1"
#define FUTURE_TAIL
#endif

#define END_OF(T, member) (offsetof(T, member) + sizeof(((T*)0)->member))

#if GW_TEST_FUTURE
static void never_called(void) { abort(); }
#define TAIL_INIT , 0xa5a5a5a5a5a5a5a5u, never_called
#define SET_TAIL(x)                          \
  do {                                       \
    (x).future_value = 0xa5a5a5a5a5a5a5a5u;  \
    (x).future_fn = never_called;            \
  } while (0)
#else
#define TAIL_INIT
#define SET_TAIL(x) ((void)0)
#endif

typedef struct { gw_plugin_descriptor d; FUTURE_TAIL } descriptor_t;
typedef struct { gw_component c; FUTURE_TAIL } component_t;
typedef struct { gw_config_key k; FUTURE_TAIL } key_t_;
typedef struct { gw_codec_vtable v; FUTURE_TAIL } codec_vtable_t;
typedef struct { gw_schedule_vtable v; FUTURE_TAIL } schedule_vtable_t;
typedef struct { gw_transport_vtable v; FUTURE_TAIL } transport_vtable_t;
typedef struct { gw_codec_properties p; FUTURE_TAIL } properties_t;

static gw_status refuse(const gw_host* host, const char* message) {
  if (host != NULL && host->struct_size >= END_OF(gw_host, set_error)) host->set_error(host->ctx, message);
  return GW_ERR_INVALID_ARGUMENT;
}

/* ---- codec: the f32 elements as they are -------------------------------------------------------- */

typedef struct codec { const gw_host* host; } codec;

static gw_status c_create(void* state, const gw_host* host, const gw_config* config, void** out) {
  int64_t level = 0;
  codec* self;
  (void)state;
  if (host->struct_size < END_OF(gw_host, get_extension)) return GW_ERR_VERSION;
  if (host->config_get_int(config, "level", &level) != GW_OK || level != 3)
    return refuse(host, PREFIX "_copy: [codec." PREFIX "_copy] level did not arrive as 3");
  self = (codec*)calloc(1, sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  *out = self;
  return GW_OK;
}

static void c_destroy(void* self) { free(self); }

/* An output struct of the host: write min(its struct_size, ours) bytes, as every writer must. */
static gw_status c_properties(void* self, gw_codec_properties* out) {
  properties_t p;
  size_t n = sizeof p;
  (void)self;
  memset(&p, 0, sizeof p);
  p.p.struct_size = (uint32_t)sizeof p;
  p.p.flags = GW_CODEC_LOSSLESS;
  p.p.sum_dtype = GW_DTYPE_F32;
  p.p.dtypes = 1u << GW_DTYPE_F32;
  SET_TAIL(p);
  if (out->struct_size < END_OF(gw_codec_properties, dtypes)) return GW_ERR_INVALID_ARGUMENT;
  if (out->struct_size < n) n = out->struct_size;
  {
    const uint32_t size = out->struct_size;
    memcpy(out, &p, n);
    out->struct_size = size;
  }
  return GW_OK;
}

static gw_status c_max_encoded_size(void* self, gw_dtype dtype, uint64_t count, uint64_t* body, uint64_t* ws) {
  (void)self;
  (void)dtype;
  *body = count * 4u;
  *ws = 0;
  return GW_OK;
}

static int tensor_ok(const gw_tensor* t) { return t->struct_size >= END_OF(gw_tensor, stream) && t->dtype == GW_DTYPE_F32; }
static int context_ok(const gw_codec_context* c) { return c == NULL || c->struct_size >= END_OF(gw_codec_context, workspace_bytes); }

static gw_status c_encode(void* self, const gw_codec_context* ctx, const gw_tensor* in, void* body, uint64_t capacity,
                          uint64_t* size) {
  const codec* c = (const codec*)self;
  if (!tensor_ok(in) || !context_ok(ctx)) return refuse(c->host, PREFIX "_copy: a host struct is below its first version");
  if (capacity < in->count * 4u) return GW_ERR_BUFFER_TOO_SMALL;
  if (in->count > 0) memcpy(body, in->data, in->count * 4u);
  *size = in->count * 4u;
  return GW_OK;
}

static gw_status c_decode(void* self, const gw_codec_context* ctx, const void* body, uint64_t size, gw_tensor* out,
                          uint32_t flags) {
  const codec* c = (const codec*)self;
  uint64_t i;
  if (!tensor_ok(out) || !context_ok(ctx)) return refuse(c->host, PREFIX "_copy: a host struct is below its first version");
  if (size != out->count * 4u) return refuse(c->host, PREFIX "_copy: the body does not hold count f32 values");
  for (i = 0; i < out->count; ++i) {
    float v;
    memcpy(&v, (const unsigned char*)body + 4u * i, 4u);
    ((float*)out->data)[i] = (flags & GW_DECODE_ACCUMULATE) ? ((float*)out->data)[i] + v : v;
  }
  return GW_OK;
}

/* ---- schedule: average every step ----------------------------------------------------------------- */

static gw_status s_create(void* state, const gw_host* host, const gw_config* config, void** out) {
  (void)state;
  (void)host;
  (void)config;
  *out = calloc(1, 1);
  return *out ? GW_OK : GW_ERR_NO_MEMORY;
}
static void s_destroy(void* self) { free(self); }
static gw_status s_on_step(void* self, const gw_schedule_runtime* rt) {
  (void)self;
  if (rt->struct_size < END_OF(gw_schedule_runtime, keep_local)) return GW_ERR_VERSION;
  return rt->sync_gradients(rt->ctx);
}
static gw_status s_step_skipped(void* self) {
  (void)self;
  return GW_OK;
}
static gw_status s_save_state(void* self, void* buf, uint64_t* size) {
  (void)self;
  (void)buf;
  *size = 0;
  return GW_OK;
}
static gw_status s_load_state(void* self, const void* buf, uint64_t size) {
  (void)self;
  (void)buf;
  return size == 0 ? GW_OK : GW_ERR_CORRUPT;
}

/* ---- transport: one rank, nothing to move --------------------------------------------------------- */

static const char loop_address[] = "loop";

static gw_status t_create(void* state, const gw_host* host, const gw_config* config, const gw_transport_init* init,
                          void** out) {
  (void)state;
  (void)config;
  if (init->struct_size < END_OF(gw_transport_init, timeout_s)) return GW_ERR_VERSION;
  if (init->world_size != 1) return refuse(host, PREFIX "_loop connects one rank only");
  *out = calloc(1, 1);
  return *out ? GW_OK : GW_ERR_NO_MEMORY;
}
static void t_destroy(void* self) { free(self); }
static gw_status t_local_address(void* self, const void** blob, uint64_t* size) {
  (void)self;
  *blob = loop_address;
  *size = sizeof loop_address;
  return GW_OK;
}
static gw_status t_connect(void* self, const void* const* blobs, const uint64_t* sizes) {
  (void)self;
  return sizes[0] == sizeof loop_address && memcmp(blobs[0], loop_address, sizeof loop_address) == 0
             ? GW_OK
             : GW_ERR_CORRUPT;
}
static gw_status t_send_start(void* self, uint32_t peer, uint64_t tag, const gw_tensor* buf,
                              gw_transport_request** request) {
  (void)self, (void)peer, (void)tag, (void)buf, (void)request;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_recv_start(void* self, uint32_t peer, uint64_t tag, gw_tensor* buf, gw_transport_request** request) {
  (void)self, (void)peer, (void)tag, (void)buf, (void)request;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_test(void* self, gw_transport_request* request, uint64_t* bytes) {
  (void)self, (void)request, (void)bytes;
  return GW_OK;
}
static void t_request_free(void* self, gw_transport_request* request) { (void)self, (void)request; }
static gw_status t_progress(void* self) {
  (void)self;
  return GW_OK;
}
static gw_status t_abort(void* self) {
  (void)self;
  return GW_OK;
}

/* ---- the descriptor ----------------------------------------------------------------------------
 * Every struct below is this plugin's own size (its struct_size, and the stride of its arrays). */

static const codec_vtable_t codec_vt = {
    {sizeof(codec_vtable_t), c_create, c_destroy, c_properties, c_max_encoded_size, c_encode, c_decode, NULL}
    TAIL_INIT};
static const schedule_vtable_t schedule_vt = {
    {sizeof(schedule_vtable_t), s_create, s_destroy, s_on_step, s_step_skipped, s_save_state, s_load_state, NULL}
    TAIL_INIT};
static const transport_vtable_t transport_vt = {
    {sizeof(transport_vtable_t), 1u << GW_MEMORY_HOST, t_create, t_destroy, t_local_address, t_connect,
     t_send_start, t_recv_start, t_test, t_request_free, t_progress, t_abort, NULL, NULL, NULL, NULL, NULL}
    TAIL_INIT};
static const key_t_ keys[] = {
    {{sizeof(key_t_), "level", GW_CONFIG_INT, "1", "A level the test sets to 3.", 1.0, 9.0, NULL} TAIL_INIT}};
static const component_t components[] = {
    {{sizeof(component_t), GW_COMPONENT_CODEC, PREFIX "_copy", "f32 elements as they are.", &keys[0].k, 1,
      &codec_vt.v} TAIL_INIT},
    {{sizeof(component_t), GW_COMPONENT_SCHEDULE, PREFIX "_every", "Average every step.", NULL, 0, &schedule_vt.v}
     TAIL_INIT},
    {{sizeof(component_t), GW_COMPONENT_TRANSPORT, PREFIX "_loop", "One rank, nothing to move.", NULL, 0,
      &transport_vt.v} TAIL_INIT}};
static const descriptor_t descriptor = {
    {sizeof(descriptor_t), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, PREFIX, "1.0.0",
     "Extensible-struct test plugin.", NULL, NULL, &components[0].c, 3, NULL} TAIL_INIT};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &descriptor.d : NULL;
}
