/* Plugins that are wrong in one way each, built only for the tests (tests/unit). BROKEN_KIND picks the
 * fault at compile time; every variant is a shared library in its own folder. */
#include <gradwire/plugin.h>

#include <stddef.h>

static int instance;
static gw_status create(void* s, const gw_host* h, const gw_config* c, void** out) {
  (void)s; (void)h; (void)c;
  *out = &instance;
  return GW_OK;
}
static void destroy(void* codec) { (void)codec; }
static gw_status properties(void* codec, gw_codec_properties* p) {
  (void)codec;
  p->flags = GW_CODEC_LOSSLESS;
  p->dtypes = 1u << GW_DTYPE_F32;
  return GW_OK;
}
static gw_status max_size(void* codec, gw_dtype d, uint64_t n, uint64_t* body, uint64_t* ws) {
  (void)codec; (void)d;
  *body = n * 4;
  *ws = 0;
  return GW_OK;
}
static gw_status encode(void* codec, const gw_codec_context* ctx, const gw_tensor* in, void* body, uint64_t cap,
                        uint64_t* size) {
  (void)codec; (void)ctx; (void)in; (void)body; (void)cap;
  *size = 0;
  return GW_OK;
}
static gw_status decode(void* codec, const gw_codec_context* ctx, const void* body, uint64_t size, gw_tensor* out,
                        uint32_t flags) {
  (void)codec; (void)ctx; (void)body; (void)size; (void)out; (void)flags;
  return GW_OK;
}

static gw_status round_plan(void* codec, const gw_codec_context* ctx, uint64_t count, gw_codec_round_plan* plan) {
  (void)codec; (void)ctx;
  plan->rounds = 1;
  plan->elements[0] = count;
  return GW_OK;
}

#if BROKEN_KIND == 4 /* malformed: a required vtable member is NULL */
static const gw_codec_vtable vtable = {sizeof(gw_codec_vtable), create, destroy, properties, max_size, encode, NULL, NULL};
#elif BROKEN_KIND == 6 /* since 1.4: round_plan without round */
static const gw_codec_vtable vtable = {sizeof(gw_codec_vtable), create, destroy, properties, max_size, encode, decode,
                                       NULL, round_plan, NULL, NULL, NULL};
#elif BROKEN_KIND == 7 /* valid: a codec of ABI 1.3, whose vtable ends before the rounds (an old plugin) */
static const gw_codec_vtable vtable = {(uint32_t)offsetof(gw_codec_vtable, round_plan), create, destroy, properties,
                                       max_size, encode, decode, NULL, NULL, NULL, NULL, NULL};
#else
static const gw_codec_vtable vtable = {sizeof(gw_codec_vtable), create, destroy, properties, max_size, encode, decode, NULL};
#endif

#if BROKEN_KIND == 5 /* a config key whose default does not fit its type */
static const gw_config_key keys[] = {
    {sizeof(gw_config_key), "ratio", GW_CONFIG_FLOAT, "\"lots\"", "A ratio.", 0.0, 1.0, NULL}};
#define NUM_KEYS 1
#else
static const gw_config_key keys[] = {
    {sizeof(gw_config_key), "level", GW_CONFIG_INT, "3", "A level from 1 to 9.", 1.0, 9.0, NULL}};
#define NUM_KEYS 1
#endif

static const gw_component components[] = {
    {sizeof(gw_component), GW_COMPONENT_CODEC, BROKEN_NAME, "A test codec.", keys, NUM_KEYS, &vtable}};

static const gw_plugin_descriptor descriptor = {
    sizeof(gw_plugin_descriptor),
#if BROKEN_KIND == 3 /* built against another ABI major */
    GW_ABI_VERSION_MAJOR + 1,
#else
    GW_ABI_VERSION_MAJOR,
#endif
    GW_ABI_VERSION_MINOR, BROKEN_NAME, "0.0.1", "A plugin for the loader tests.", NULL, NULL, components, 1, NULL};

/* Keeps every helper referenced whichever fault is compiled. */
GW_PLUGIN_EXPORT gw_status (*const gw_test_decode)(void*, const gw_codec_context*, const void*, uint64_t, gw_tensor*,
                                                  uint32_t) = decode;
GW_PLUGIN_EXPORT gw_status (*const gw_test_round_plan)(void*, const gw_codec_context*, uint64_t,
                                                      gw_codec_round_plan*) = round_plan;

#if BROKEN_KIND == 1 /* exports no entry symbol */
GW_PLUGIN_EXPORT int not_the_entry(void) { return descriptor.num_components == 1; }
#else
GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t major, uint32_t minor) {
  (void)major; (void)minor;
#if BROKEN_KIND == 2 /* refuses every host */
  return descriptor.num_components == 1 ? NULL : &descriptor;
#else
  return &descriptor;
#endif
}
#endif
