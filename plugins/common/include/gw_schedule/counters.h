/* Checkpoint state of the schedule plugins: a magic naming the schedule and its format, then a fixed
 * number of u64 counters, all little-endian. Header-only C99, shared by plugins/every_step, accumulate,
 * local_sgd and async. */
#ifndef GW_SCHEDULE_COUNTERS_H
#define GW_SCHEDULE_COUNTERS_H

#include <gradwire/plugin.h>

#include <stddef.h>

static inline void gw_counters_put64(unsigned char* p, uint64_t v) {
  int i;
  for (i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t gw_counters_get64(const unsigned char* p) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* save_state of gw_schedule_vtable for `n` counters: with buf NULL only sets *size. */
static inline gw_status gw_counters_save(const gw_host* host, uint64_t magic, const uint64_t* counters, size_t n,
                                         void* buf, uint64_t* size) {
  const uint64_t needed = 8 * (uint64_t)(n + 1);
  size_t i;
  if (buf == NULL) {
    *size = needed;
    return GW_OK;
  }
  if (*size < needed) {
    host->set_error(host->ctx, "schedule state buffer too small; ask for the size with buf NULL first");
    return GW_ERR_BUFFER_TOO_SMALL;
  }
  gw_counters_put64((unsigned char*)buf, magic);
  for (i = 0; i < n; ++i) gw_counters_put64((unsigned char*)buf + 8 * (i + 1), counters[i]);
  *size = needed;
  return GW_OK;
}

/* load_state: GW_ERR_CORRUPT unless `buf` is exactly what gw_counters_save wrote with this magic. */
static inline gw_status gw_counters_load(const gw_host* host, uint64_t magic, uint64_t* counters, size_t n,
                                         const void* buf, uint64_t size, const char* what) {
  size_t i;
  if (buf == NULL || size != 8 * (uint64_t)(n + 1) || gw_counters_get64((const unsigned char*)buf) != magic) {
    host->set_error(host->ctx, what);
    return GW_ERR_CORRUPT;
  }
  for (i = 0; i < n; ++i) counters[i] = gw_counters_get64((const unsigned char*)buf + 8 * (i + 1));
  return GW_OK;
}

#endif /* GW_SCHEDULE_COUNTERS_H */
