/* C shims of the Go binding (included by every file that calls C). */
#ifndef GW_GO_SHIM_H
#define GW_GO_SHIM_H
#include <gradwire/gradwire.h>
#include <stdlib.h>
#include <string.h>

// gw_last_error is thread-local and a goroutine may move to another OS thread between two cgo calls,
// so every call goes through a shim that copies the message in the same C call (freed by Go).
static inline gw_status keep(gw_status s, char** err) {
  if (s < 0) *err = strdup(gw_last_error());
  return s;
}

// Tensors are built here, on the C stack, from a data pointer passed as a plain argument: Go memory
// handed to C never contains a Go pointer (the cgo pointer rules).
static inline gw_tensor tensor(int dtype, void* data, uint64_t count) {
  gw_tensor t = GW_TENSOR_INIT;
  t.dtype = (gw_dtype)dtype;
  t.data = data;
  t.count = count;
  return t;
}

static inline gw_status go_runtime_create(const char* path, const char* text, const char** paths, uint32_t npaths,
                                   uint32_t flags, int level, gw_runtime** rt, char** err) {
  gw_runtime_options o = GW_RUNTIME_OPTIONS_INIT;
  o.config_path = path;
  o.config_text = text;
  o.plugin_paths = paths;
  o.num_plugin_paths = npaths;
  o.flags = flags;
  o.log_level = (gw_log_level)level;
  return keep(gw_runtime_create(&o, rt), err);
}
static inline gw_status go_runtime_destroy(gw_runtime* r, char** err) { return keep(gw_runtime_destroy(r), err); }
static inline gw_status go_plugin_count(gw_runtime* r, uint32_t* n, char** err) { return keep(gw_runtime_plugin_count(r, n), err); }
static inline gw_status go_plugin_info(gw_runtime* r, uint32_t i, gw_plugin_info* info, char** err) {
  gw_plugin_info x = GW_PLUGIN_INFO_INIT;
  gw_status s = keep(gw_runtime_plugin_info(r, i, &x), err);
  *info = x;
  return s;
}

static inline gw_status go_codec_create(gw_runtime* r, const char* name, gw_codec** c, char** err) {
  return keep(gw_codec_create(r, name, c), err);
}
static inline gw_status go_codec_destroy(gw_codec* c, char** err) { return keep(gw_codec_destroy(c), err); }
static inline gw_status go_codec_max(gw_codec* c, int dtype, uint64_t n, uint64_t* b, char** err) {
  return keep(gw_codec_max_encoded_size(c, (gw_dtype)dtype, n, b), err);
}
static inline gw_status go_codec_encode(gw_codec* c, int has_ctx, uint64_t seed, uint64_t step, int dtype, void* in,
                                 uint64_t n, void* payload, uint64_t cap, uint64_t* size, char** err) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = seed;
  x.step = step;
  gw_tensor t = tensor(dtype, in, n);
  return keep(gw_codec_encode(c, has_ctx ? &x : NULL, &t, payload, cap, size), err);
}
static inline gw_status go_codec_decode(gw_codec* c, void* payload, uint64_t size, int dtype, void* out, uint64_t n,
                                 uint32_t flags, char** err) {
  gw_tensor t = tensor(dtype, out, n);
  return keep(gw_codec_decode(c, NULL, payload, size, &t, flags), err);
}

static inline gw_status go_comm_create(gw_runtime* r, int64_t rank, int64_t size, double timeout, gw_comm** c, char** err) {
  gw_comm_options o = GW_COMM_OPTIONS_INIT;
  o.rank = rank;
  o.world_size = size;
  if (rank >= 0) o.local_rank = rank;
  o.timeout_s = timeout;
  return keep(gw_comm_create(r, &o, c), err);
}
static inline gw_status go_comm_destroy(gw_comm* c, char** err) { return keep(gw_comm_destroy(c), err); }
static inline gw_status go_comm_abort(gw_comm* c, char** err) { return keep(gw_comm_abort(c), err); }

static inline gw_status go_allreduce(gw_comm* c, int dtype, void* in, uint64_t nin, void* out, uint64_t nout, int op,
                              gw_request** req, char** err) {
  gw_tensor i = tensor(dtype, in, nin), o = tensor(dtype, out, nout);
  if (req) return keep(gw_allreduce_start(c, &i, &o, (gw_reduce_op)op, req), err);
  return keep(gw_allreduce(c, &i, &o, (gw_reduce_op)op), err);
}
static inline gw_status go_allgather(gw_comm* c, int dtype, void* in, uint64_t nin, void* out, uint64_t nout,
                              gw_request** req, char** err) {
  gw_tensor i = tensor(dtype, in, nin), o = tensor(dtype, out, nout);
  if (req) return keep(gw_allgather_start(c, &i, &o, req), err);
  return keep(gw_allgather(c, &i, &o), err);
}
static inline gw_status go_broadcast(gw_comm* c, int dtype, void* buf, uint64_t n, uint32_t root, gw_request** req,
                              char** err) {
  gw_tensor b = tensor(dtype, buf, n);
  if (req) return keep(gw_broadcast_start(c, &b, root, req), err);
  return keep(gw_broadcast(c, &b, root), err);
}
static inline gw_status go_barrier(gw_comm* c, gw_request** req, char** err) {
  if (req) return keep(gw_barrier_start(c, req), err);
  return keep(gw_barrier(c), err);
}
static inline gw_status go_send(gw_comm* c, int dtype, void* buf, uint64_t n, uint32_t peer, uint32_t tag, char** err) {
  gw_tensor b = tensor(dtype, buf, n);
  return keep(gw_send(c, &b, peer, tag), err);
}
static inline gw_status go_recv(gw_comm* c, int dtype, void* buf, uint64_t n, uint32_t peer, uint32_t tag, char** err) {
  gw_tensor b = tensor(dtype, buf, n);
  return keep(gw_recv(c, &b, peer, tag), err);
}
static inline gw_status go_allreduce_compressed(gw_comm* c, gw_codec* codec, uint64_t seed, uint64_t step, void* in,
                                         uint64_t nin, void* out, uint64_t nout, int op, gw_request** req,
                                         char** err) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = seed;
  x.step = step;
  gw_tensor i = tensor(GW_DTYPE_F32, in, nin), o = tensor(GW_DTYPE_F32, out, nout);
  if (req) return keep(gw_allreduce_compressed_start(c, codec, &x, &i, &o, (gw_reduce_op)op, req), err);
  return keep(gw_allreduce_compressed(c, codec, &x, &i, &o, (gw_reduce_op)op), err);
}
static inline gw_status go_allreduce_compressed_ef(gw_comm* c, gw_error_feedback* ef, uint64_t seed, uint64_t step,
                                                   void* in, uint64_t nin, void* out, uint64_t nout, int op,
                                                   gw_request** req, char** err) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = seed;
  x.step = step;
  gw_tensor i = tensor(GW_DTYPE_F32, in, nin), o = tensor(GW_DTYPE_F32, out, nout);
  if (req) return keep(gw_allreduce_compressed_ef_start(c, ef, &x, &i, &o, (gw_reduce_op)op, req), err);
  return keep(gw_allreduce_compressed_ef(c, ef, &x, &i, &o, (gw_reduce_op)op), err);
}
static inline gw_status go_reduce_scatter_compressed(gw_comm* c, gw_codec* codec, gw_error_feedback* ef, uint64_t seed,
                                                    uint64_t step, void* in, uint64_t nin, void* out, uint64_t nout,
                                                    int op, gw_request** req, char** err) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = seed;
  x.step = step;
  gw_tensor i = tensor(GW_DTYPE_F32, in, nin), o = tensor(GW_DTYPE_F32, out, nout);
  if (ef && req) return keep(gw_reduce_scatter_compressed_ef_start(c, ef, &x, &i, &o, (gw_reduce_op)op, req), err);
  if (ef) return keep(gw_reduce_scatter_compressed_ef(c, ef, &x, &i, &o, (gw_reduce_op)op), err);
  if (req) return keep(gw_reduce_scatter_compressed_start(c, codec, &x, &i, &o, (gw_reduce_op)op, req), err);
  return keep(gw_reduce_scatter_compressed(c, codec, &x, &i, &o, (gw_reduce_op)op), err);
}
static inline gw_status go_allgather_compressed(gw_comm* c, gw_codec* codec, gw_error_feedback* ef, uint64_t seed,
                                               uint64_t step, void* in, uint64_t nin, void* out, uint64_t nout,
                                               gw_request** req, char** err) {
  gw_codec_context x = GW_CODEC_CONTEXT_INIT;
  x.seed = seed;
  x.step = step;
  gw_tensor i = tensor(GW_DTYPE_F32, in, nin), o = tensor(GW_DTYPE_F32, out, nout);
  if (ef && req) return keep(gw_allgather_compressed_ef_start(c, ef, &x, &i, &o, req), err);
  if (ef) return keep(gw_allgather_compressed_ef(c, ef, &x, &i, &o), err);
  if (req) return keep(gw_allgather_compressed_start(c, codec, &x, &i, &o, req), err);
  return keep(gw_allgather_compressed(c, codec, &x, &i, &o), err);
}
static inline gw_status go_error_feedback_create(gw_codec* c, gw_error_feedback** ef, char** err) {
  return keep(gw_error_feedback_create(c, ef), err);
}
static inline gw_status go_error_feedback_destroy(gw_error_feedback* ef, char** err) {
  return keep(gw_error_feedback_destroy(ef), err);
}
static inline gw_status go_error_feedback_reset(gw_error_feedback* ef, char** err) {
  return keep(gw_error_feedback_reset(ef), err);
}
static inline gw_status go_error_feedback_state_size(gw_error_feedback* ef, uint64_t* size, char** err) {
  return keep(gw_error_feedback_state_size(ef, size), err);
}
static inline gw_status go_error_feedback_save(gw_error_feedback* ef, void* buf, uint64_t cap, uint64_t* size,
                                               char** err) {
  return keep(gw_error_feedback_save(ef, buf, cap, size), err);
}
static inline gw_status go_error_feedback_load(gw_error_feedback* ef, const void* buf, uint64_t size, char** err) {
  return keep(gw_error_feedback_load(ef, buf, size), err);
}
static inline gw_status go_reduce_scatter(gw_comm* c, int dtype, void* in, uint64_t nin, void* out, uint64_t nout,
                                          int op, char** err) {
  gw_tensor i = tensor(dtype, in, nin), o = tensor(dtype, out, nout);
  return keep(gw_reduce_scatter(c, &i, &o, (gw_reduce_op)op), err);
}
static inline gw_status go_allgatherv(gw_comm* c, int dtype, void* in, uint64_t nin, void* out, uint64_t nout,
                                      const uint64_t* counts, char** err) {
  gw_tensor i = tensor(dtype, in, nin), o = tensor(dtype, out, nout);
  return keep(gw_allgatherv(c, &i, &o, counts), err);
}
static inline gw_status go_config_dump(gw_runtime* r, int format, char* buf, size_t cap, size_t* len, char** err) {
  return keep(gw_runtime_config_dump(r, (gw_config_format)format, buf, cap, len), err);
}
static inline gw_status go_request_test(gw_request* r, char** err) { return keep(gw_request_test(r), err); }
static inline gw_status go_request_wait(gw_request* r, double t, char** err) { return keep(gw_request_wait(r, t), err); }
static inline gw_status go_request_free(gw_request* r, char** err) { return keep(gw_request_free(r), err); }

static inline gw_status go_sync_create(gw_comm* c, gw_runtime* r, gw_sync** s, char** err) {
  gw_sync_options o = GW_SYNC_OPTIONS_INIT;
  o.runtime = r;
  return keep(gw_sync_create(c, &o, s), err);
}
static inline gw_status go_sync_destroy(gw_sync* s, char** err) { return keep(gw_sync_destroy(s), err); }
static inline gw_status go_sync_register(gw_sync* s, const char* name, float* g, float* p, uint64_t n, char** err) {
  gw_tensor gt = tensor(GW_DTYPE_F32, g, n), pt = tensor(GW_DTYPE_F32, p, n);
  return keep(gw_sync_register(s, name, &gt, p ? &pt : NULL), err);
}
static inline gw_status go_sync_register_shape(gw_sync* s, const char* name, uint32_t ndim, const int64_t* dims,
                                               char** err) {
  return keep(gw_sync_register_shape(s, name, ndim, dims), err);
}
static inline gw_status go_sync_finalize(gw_sync* s, char** err) { return keep(gw_sync_finalize(s), err); }
static inline gw_status go_sync_step(gw_sync* s, uint32_t* flags, char** err) { return keep(gw_sync_step(s, flags), err); }
static inline gw_status go_sync_stats(gw_sync* s, uint32_t bucket, gw_sync_stats* out, char** err) {
  gw_sync_stats x = GW_SYNC_STATS_INIT;
  gw_status st = keep(gw_sync_get_stats(s, bucket, &x), err);
  *out = x;
  return st;
}
#endif
