/* The schedule "local_sgd": local SGD / periodic model averaging. During the first `warmup` steps the
 * gradients are averaged every step (as every_step); after that every step is local, and after every
 * `period` local steps the parameters are averaged across ranks (before that step's update). */
#include <gradwire/plugin.h>
#include <gw_schedule/counters.h>

#include <stdlib.h>

#define STATE_MAGIC 0x314c5347u /* "GSL1" */

typedef struct local_sgd {
  const gw_host* host;
  uint64_t period;
  uint64_t warmup;
  uint64_t step;     /* steps taken, skipped ones excluded */
  uint64_t averages; /* parameter averagings done */
} local_sgd;

static const gw_config_key local_sgd_keys[] = {
    {sizeof(gw_config_key), "period", GW_CONFIG_INT, "8", "Local steps between two averagings of the parameters.",
     1.0, 1000000.0, NULL},
    {sizeof(gw_config_key), "warmup", GW_CONFIG_INT, "0",
     "Steps at the start that average gradients every step before local steps begin.", 0.0, 1e12, NULL}};

static gw_status ls_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  int64_t period = 0, warmup = 0;
  local_sgd* self;
  gw_status s = host->config_get_int(config, "period", &period);
  (void)plugin_state;
  if (s == GW_OK) s = host->config_get_int(config, "warmup", &warmup);
  if (s != GW_OK) return s;
  self = (local_sgd*)calloc(1, sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  self->period = (uint64_t)period;
  self->warmup = (uint64_t)warmup;
  *out = self;
  return GW_OK;
}

static void ls_destroy(void* schedule) { free(schedule); }

static gw_status ls_on_step(void* schedule, const gw_schedule_runtime* rt) {
  local_sgd* self = (local_sgd*)schedule;
  gw_status s;
  if (self->step < self->warmup) {
    s = rt->sync_gradients(rt->ctx);
  } else {
    const uint64_t local_steps = self->step - self->warmup;
    s = GW_OK;
    if (local_steps > 0 && local_steps % self->period == 0) {
      s = rt->sync_parameters(rt->ctx);
      if (s == GW_OK) self->averages++;
    }
    if (s == GW_OK) s = rt->keep_local(rt->ctx);
  }
  if (s == GW_OK) self->step++;
  return s;
}

static gw_status ls_step_skipped(void* schedule) {
  (void)schedule;
  return GW_OK;
}

static gw_status ls_save_state(void* schedule, void* buf, uint64_t* size) {
  const local_sgd* self = (const local_sgd*)schedule;
  const uint64_t counters[4] = {self->period, self->warmup, self->step, self->averages};
  return gw_counters_save(self->host, STATE_MAGIC, counters, 4, buf, size);
}

static gw_status ls_load_state(void* schedule, const void* buf, uint64_t size) {
  local_sgd* self = (local_sgd*)schedule;
  uint64_t c[4];
  gw_status s = gw_counters_load(self->host, STATE_MAGIC, c, 4, buf, size,
                                 "local_sgd: the state blob was not written by local_sgd 1.x");
  if (s != GW_OK) return s;
  if (c[0] != self->period || c[1] != self->warmup) {
    self->host->set_error(self->host->ctx, "local_sgd: the checkpoint was taken with another period or warmup; "
                                           "resume with the same [schedule.local_sgd]");
    return GW_ERR_MISMATCH;
  }
  self->step = c[2];
  self->averages = c[3];
  return GW_OK;
}

static const gw_schedule_vtable ls_vtable = {sizeof(gw_schedule_vtable), ls_create, ls_destroy, ls_on_step,
                                             ls_step_skipped, ls_save_state, ls_load_state, NULL};

static const gw_component ls_components[] = {
    {sizeof(gw_component), GW_COMPONENT_SCHEDULE, "local_sgd",
     "Local steps, then average the parameters every `period` steps (after an optional warm-up).", local_sgd_keys, 2,
     &ls_vtable}};

static const gw_plugin_descriptor ls_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "local_sgd", "1.0.0",
    "Local SGD: periodic model averaging.", NULL, NULL, ls_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &ls_descriptor : NULL;
}
