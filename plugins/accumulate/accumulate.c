/* The schedule "accumulate": gradient accumulation. Each call is one micro-step; the gradients of `steps`
 * micro-steps are summed locally and only the last one communicates: the runtime replaces the gradients
 * by the accumulated sum averaged across ranks (and micro-steps), and the optimizer steps once. */
#include <gradwire/plugin.h>
#include <gw_schedule/counters.h>

#include <stdlib.h>

#define STATE_MAGIC 0x31414347u /* "GCA1" */

typedef struct accumulate {
  const gw_host* host;
  uint64_t steps;       /* micro-steps per synchronization */
  uint64_t micro_step;  /* micro-steps taken (skipped ones excluded) */
  uint64_t syncs;
} accumulate;

static const gw_config_key accumulate_keys[] = {
    {sizeof(gw_config_key), "steps", GW_CONFIG_INT, "4",
     "Micro-steps whose gradients are summed locally before one synchronization.", 1.0, 65536.0, NULL}};

static gw_status acc_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  int64_t steps = 0;
  accumulate* self;
  const gw_status s = host->config_get_int(config, "steps", &steps);
  (void)plugin_state;
  if (s != GW_OK) return s;
  self = (accumulate*)calloc(1, sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  self->steps = (uint64_t)steps;
  *out = self;
  return GW_OK;
}

static void acc_destroy(void* schedule) { free(schedule); }

static gw_status acc_on_step(void* schedule, const gw_schedule_runtime* rt) {
  accumulate* self = (accumulate*)schedule;
  gw_status s = rt->accumulate_gradients(rt->ctx);
  if (s != GW_OK) return s;
  if ((self->micro_step + 1) % self->steps == 0) {
    s = rt->sync_accumulated(rt->ctx);
    if (s != GW_OK) return s;
    self->syncs++;
  }
  self->micro_step++;
  return GW_OK;
}

static gw_status acc_step_skipped(void* schedule) {
  (void)schedule; /* a skipped micro-step neither counts nor accumulates */
  return GW_OK;
}

static gw_status acc_save_state(void* schedule, void* buf, uint64_t* size) {
  const accumulate* self = (const accumulate*)schedule;
  const uint64_t counters[3] = {self->steps, self->micro_step, self->syncs};
  return gw_counters_save(self->host, STATE_MAGIC, counters, 3, buf, size);
}

static gw_status acc_load_state(void* schedule, const void* buf, uint64_t size) {
  accumulate* self = (accumulate*)schedule;
  uint64_t c[3];
  gw_status s = gw_counters_load(self->host, STATE_MAGIC, c, 3, buf, size,
                                 "accumulate: the state blob was not written by accumulate 1.x");
  if (s != GW_OK) return s;
  if (c[0] != self->steps) {
    self->host->set_error(self->host->ctx, "accumulate: the checkpoint was taken with another [schedule.accumulate] "
                                           "steps; resume with the same value");
    return GW_ERR_MISMATCH;
  }
  self->micro_step = c[1];
  self->syncs = c[2];
  return GW_OK;
}

static const gw_schedule_vtable acc_vtable = {sizeof(gw_schedule_vtable), acc_create, acc_destroy, acc_on_step,
                                              acc_step_skipped, acc_save_state, acc_load_state, NULL};

static const gw_component acc_components[] = {
    {sizeof(gw_component), GW_COMPONENT_SCHEDULE, "accumulate",
     "Sum gradients over several micro-steps locally, then synchronize once.", accumulate_keys, 1, &acc_vtable}};

static const gw_plugin_descriptor acc_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "accumulate", "1.0.0",
    "Gradient accumulation over micro-steps.", NULL, NULL, acc_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &acc_descriptor : NULL;
}
