/* Extensible structs through the C ABI, for every struct an application passes in or gets out, with two
 * clients and two plugins:
 *   - a first-version client: each struct's struct_size is the sizeof of the header it was built with;
 *   - a future client: each struct's struct_size is larger than the library's, the bytes the library does
 *     not know hold a poison pattern (inputs: must be ignored; outputs: must stay untouched);
 * and the plugins of versioned_plugin.c (this header's structs, and larger ones). Every output struct
 * sits in a box whose bytes past the client's struct are checked afterwards: the library writes
 * min(struct_size, its own) bytes and keeps the caller's struct_size. A struct_size below the first
 * version is refused with GW_ERR_INVALID_ARGUMENT. Built with an older gradwire.h against a newer
 * library, the first-version client is an old binary (docs/abi.md).
 * Usage: gw_abi_struct_versions V1_PLUGIN FUTURE_PLUGIN */
#include <gradwire/gradwire.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAIL 48 /* bytes a future client's structs have past the library's */
#define POISON 0xa5

#define CHECK(call)                                                                         \
  do {                                                                                      \
    gw_status s_ = (call);                                                                  \
    if (s_ != GW_OK) {                                                                      \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", where, __LINE__, #call, gw_status_string(s_), \
              gw_last_error());                                                             \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: expected %s\n", where, __LINE__, #cond);       \
      return 1;                                                             \
    }                                                                       \
  } while (0)

/* A struct in a box with room for a future client's members; `future` picks the client. */
#define BOX(T, name, init)                                                                  \
  union {                                                                                   \
    T s;                                                                                    \
    unsigned char b[sizeof(T) + TAIL];                                                      \
  } name;                                                                                   \
  do {                                                                                      \
    T init_ = init;                                                                         \
    memset(name.b, POISON, sizeof name.b);                                                  \
    name.s = init_;                                                                         \
    name.s.struct_size = (uint32_t)(future ? sizeof name.b : sizeof(T));                    \
  } while (0)

/* The bytes past the library's struct are untouched and the caller's struct_size is kept. */
#define OUT_INTACT(T, name) (tail_intact(name.b + sizeof(T)) && name.s.struct_size == (future ? sizeof name.b : sizeof(T)))

static int tail_intact(const unsigned char* p) {
  int i;
  for (i = 0; i < TAIL; ++i)
    if (p[i] != POISON) return 0;
  return 1;
}

static gw_status one_rank_allgather(void* user, const void* in, uint64_t bytes, void* out) {
  (void)user;
  memcpy(out, in, bytes);
  return GW_OK;
}

static int run(int future, const char* prefix, const char* v1_plugin, const char* future_plugin) {
  char where[64], config[512], name[64];
  const char* paths[2];
  gw_runtime* rt = NULL;
  gw_codec* codec = NULL;
  gw_error_feedback* ef = NULL;
  gw_comm* comm = NULL;
  gw_sync* sync = NULL;
  uint32_t i, n = 0, found = 0, sflags = 0;
  float in[4] = {1.0f, -2.0f, 3.5f, 0.25f}, out[4], grad[4], param[4];
  unsigned char payload[256];
  uint64_t size = 0;

  sprintf(where, "%s client, %s plugin", future ? "future" : "first-version", prefix);
  paths[0] = v1_plugin;
  paths[1] = future_plugin;
  sprintf(config,
          "[codec]\nname = \"%s_copy\"\n[codec.%s_copy]\nlevel = 3\n[schedule]\nname = \"%s_every\"\n"
          "[transport]\ninter = \"%s_loop\"\n",
          prefix, prefix, prefix, prefix);

  { /* gw_runtime_options in */
    BOX(gw_runtime_options, options, GW_RUNTIME_OPTIONS_INIT);
    options.s.config_text = config;
    options.s.plugin_paths = paths;
    options.s.num_plugin_paths = 2;
    options.s.flags = GW_RUNTIME_NO_ENV_OVERRIDES;
    CHECK(gw_runtime_create(&options.s, &rt));
  }
  CHECK(gw_runtime_plugin_count(rt, &n));
  for (i = 0; i < n; ++i) { /* gw_plugin_info and gw_component_info out */
    BOX(gw_plugin_info, info, GW_PLUGIN_INFO_INIT);
    CHECK(gw_runtime_plugin_info(rt, i, &info.s));
    EXPECT(OUT_INTACT(gw_plugin_info, info));
    if (info.s.status == GW_OK && strcmp(info.s.name, prefix) == 0) {
      BOX(gw_component_info, component, GW_COMPONENT_INFO_INIT);
      found = 1;
      EXPECT(info.s.num_components == 3);
      CHECK(gw_runtime_component_info(rt, i, 2, &component.s));
      EXPECT(OUT_INTACT(gw_component_info, component));
      sprintf(name, "%s_loop", prefix);
      EXPECT(component.s.kind == 2 && strcmp(component.s.name, name) == 0);
    }
  }
  EXPECT(found);

  CHECK(gw_codec_create(rt, NULL, &codec));
  { /* gw_codec_properties out (written by the runtime from the plugin's, whatever its size) */
    BOX(gw_codec_properties, props, GW_CODEC_PROPERTIES_INIT);
    CHECK(gw_codec_get_properties(codec, &props.s));
    EXPECT(OUT_INTACT(gw_codec_properties, props));
    EXPECT(props.s.flags == GW_CODEC_LOSSLESS && props.s.dtypes == (1u << GW_DTYPE_F32));
  }
  { /* gw_tensor and gw_codec_context in */
    BOX(gw_tensor, t, GW_TENSOR_INIT);
    BOX(gw_codec_context, ctx, GW_CODEC_CONTEXT_INIT);
    t.s.data = in;
    t.s.count = 4;
    CHECK(gw_codec_encode(codec, &ctx.s, &t.s, payload, sizeof payload, &size));
    EXPECT(size == 32 + 16);
    memset(out, 0, sizeof out);
    t.s.data = out;
    CHECK(gw_codec_decode(codec, &ctx.s, payload, size, &t.s, 0));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    CHECK(gw_error_feedback_create(codec, &ef));
    t.s.data = in;
    CHECK(gw_error_feedback_encode(ef, 7, &ctx.s, &t.s, payload, sizeof payload, &size));
    CHECK(gw_error_feedback_destroy(ef));
  }
  { /* gw_comm_options in; tensors and context through the collectives */
    BOX(gw_comm_options, co, GW_COMM_OPTIONS_INIT);
    BOX(gw_tensor, a, GW_TENSOR_INIT);
    BOX(gw_tensor, b, GW_TENSOR_INIT);
    BOX(gw_codec_context, ctx, GW_CODEC_CONTEXT_INIT);
    co.s.rank = 0;
    co.s.world_size = 1;
    co.s.local_rank = 0;
    co.s.allgather = one_rank_allgather;
    co.s.timeout_s = 30.0;
    CHECK(gw_comm_create(rt, &co.s, &comm));
    a.s.data = in;
    a.s.count = 4;
    b.s.data = out;
    b.s.count = 4;
    memset(out, 0, sizeof out);
    CHECK(gw_allreduce(comm, &a.s, &b.s, GW_REDUCE_SUM));
    EXPECT(memcmp(in, out, sizeof in) == 0);
    memset(out, 0, sizeof out);
    CHECK(gw_allreduce_compressed(comm, codec, &ctx.s, &a.s, &b.s, GW_REDUCE_AVG));
    EXPECT(memcmp(in, out, sizeof in) == 0);
  }
  { /* gw_sync_options in, gw_sync_bucket_info and gw_sync_stats out */
    BOX(gw_sync_options, so, GW_SYNC_OPTIONS_INIT);
    BOX(gw_tensor, g, GW_TENSOR_INIT);
    BOX(gw_tensor, p, GW_TENSOR_INIT);
    BOX(gw_sync_bucket_info, bucket, GW_SYNC_BUCKET_INFO_INIT);
    BOX(gw_sync_stats, stats, GW_SYNC_STATS_INIT);
    so.s.runtime = rt;
    CHECK(gw_sync_create(comm, &so.s, &sync));
    memcpy(grad, in, sizeof grad);
    memcpy(param, in, sizeof param);
    g.s.data = grad;
    g.s.count = 4;
    p.s.data = param;
    p.s.count = 4;
    CHECK(gw_sync_register(sync, "w", &g.s, &p.s));
    CHECK(gw_sync_finalize(sync));
    CHECK(gw_sync_get_bucket_info(sync, 0, &bucket.s));
    EXPECT(OUT_INTACT(gw_sync_bucket_info, bucket));
    sprintf(name, "%s_copy", prefix);
    EXPECT(bucket.s.count == 4 && bucket.s.num_tensors == 1 && strcmp(bucket.s.codec, name) == 0);
    CHECK(gw_sync_step(sync, &sflags));
    EXPECT(sflags & GW_SYNC_APPLY);
    EXPECT(memcmp(grad, in, sizeof grad) == 0);
    CHECK(gw_sync_get_stats(sync, GW_SYNC_ALL_BUCKETS, &stats.s));
    EXPECT(OUT_INTACT(gw_sync_stats, stats));
    EXPECT(stats.s.steps == 1 && stats.s.syncs == 1 && stats.s.raw_bytes == 16);
    CHECK(gw_sync_destroy(sync));
  }
  CHECK(gw_comm_destroy(comm));
  CHECK(gw_codec_destroy(codec));
  CHECK(gw_runtime_destroy(rt));
  printf("ok: %s\n", where);
  return 0;
}

/* A struct_size below the first version (a struct that was not initialized) is refused, in and out. */
static int too_small(void) {
  const char* where = "struct_size below the first version";
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  gw_runtime* rt = NULL;
  gw_plugin_info info = GW_PLUGIN_INFO_INIT;
  options.struct_size = (uint32_t)offsetof(gw_runtime_options, flags);
  EXPECT(gw_runtime_create(&options, &rt) == GW_ERR_INVALID_ARGUMENT);
  EXPECT(strstr(gw_last_error(), "options->struct_size") != NULL);
  options.struct_size = (uint32_t)sizeof options;
  options.flags = GW_RUNTIME_NO_ENV_OVERRIDES | GW_RUNTIME_INSPECT_ONLY; /* whichever plugins are built */
  CHECK(gw_runtime_create(&options, &rt));
  info.struct_size = (uint32_t)offsetof(gw_plugin_info, num_components);
  EXPECT(gw_runtime_plugin_info(rt, 0, &info) == GW_ERR_INVALID_ARGUMENT);
  CHECK(gw_runtime_destroy(rt));
  printf("ok: %s\n", where);
  return 0;
}

int main(int argc, char** argv) {
  int future, plugin;
  /* Built with another header than the library's (an old binary against a newer library, or the other
   * way round), this program cannot know the library's struct sizes, which its "future" structs must
   * exceed: it runs its own-header client only, which is then the old (or the new) client. */
  const int clients = gw_abi_version_minor() == GW_ABI_VERSION_MINOR ? 2 : 1;
  if (argc != 3) {
    fprintf(stderr, "usage: %s V1_PLUGIN FUTURE_PLUGIN\n", argv[0]);
    return 2;
  }
  if (clients == 1)
    printf("library ABI %u.%u, this program's header %u.%u: the future-client runs need the library's header\n",
           gw_abi_version_major(), gw_abi_version_minor(), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR);
  for (future = 0; future < clients; ++future)
    for (plugin = 0; plugin < 2; ++plugin)
      if (run(future, plugin ? "abifut" : "abiv1", argv[1], argv[2]) != 0) return 1;
  return too_small();
}
