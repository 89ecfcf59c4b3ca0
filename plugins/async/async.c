/* The schedule "async": bounded-staleness gradient exchange. At step t the exchange of step t's gradients
 * starts in the background (slot t) and the exchange started at step t - s is finished and applied, so
 * every applied average is exactly s steps old and communication hides behind s steps of compute. The
 * first s steps apply their local gradients. */
#include <gradwire/plugin.h>
#include <gw_schedule/counters.h>

#include <stdlib.h>

#define STATE_MAGIC 0x31415347u /* "GSA1" */

typedef struct async_schedule {
  const gw_host* host;
  uint64_t staleness;
  uint64_t step;
} async_schedule;

static const gw_config_key async_keys[] = {
    {sizeof(gw_config_key), "staleness", GW_CONFIG_INT, "1",
     "Steps between starting an exchange and applying its result (bounded staleness s).", 1.0, 64.0, NULL}};

static gw_status as_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  int64_t staleness = 0;
  async_schedule* self;
  const gw_status s = host->config_get_int(config, "staleness", &staleness);
  (void)plugin_state;
  if (s != GW_OK) return s;
  self = (async_schedule*)calloc(1, sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  self->staleness = (uint64_t)staleness;
  *out = self;
  return GW_OK;
}

static void as_destroy(void* schedule) { free(schedule); }

static gw_status as_on_step(void* schedule, const gw_schedule_runtime* rt) {
  async_schedule* self = (async_schedule*)schedule;
  gw_status s = rt->start_gradient_exchange(rt->ctx, self->step);
  if (s != GW_OK) return s;
  s = self->step >= self->staleness ? rt->finish_gradient_exchange(rt->ctx, self->step - self->staleness)
                                    : rt->keep_local(rt->ctx);
  if (s == GW_OK) self->step++;
  return s;
}

static gw_status as_step_skipped(void* schedule) {
  (void)schedule;
  return GW_OK;
}

static gw_status as_save_state(void* schedule, void* buf, uint64_t* size) {
  const async_schedule* self = (const async_schedule*)schedule;
  const uint64_t counters[2] = {self->staleness, self->step};
  return gw_counters_save(self->host, STATE_MAGIC, counters, 2, buf, size);
}

static gw_status as_load_state(void* schedule, const void* buf, uint64_t size) {
  async_schedule* self = (async_schedule*)schedule;
  uint64_t c[2];
  gw_status s = gw_counters_load(self->host, STATE_MAGIC, c, 2, buf, size,
                                 "async: the state blob was not written by async 1.x");
  if (s != GW_OK) return s;
  if (c[0] != self->staleness) {
    self->host->set_error(self->host->ctx, "async: the checkpoint was taken with another staleness; resume with the "
                                           "same [schedule.async] staleness");
    return GW_ERR_MISMATCH;
  }
  self->step = c[1];
  return GW_OK;
}

static const gw_schedule_vtable as_vtable = {sizeof(gw_schedule_vtable), as_create, as_destroy, as_on_step,
                                             as_step_skipped, as_save_state, as_load_state, NULL};

static const gw_component as_components[] = {
    {sizeof(gw_component), GW_COMPONENT_SCHEDULE, "async",
     "Exchange gradients in the background and apply each average exactly `staleness` steps later.", async_keys, 1,
     &as_vtable}};

static const gw_plugin_descriptor as_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "async", "1.0.0",
    "Asynchronous exchange with bounded staleness.", NULL, NULL, as_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &as_descriptor : NULL;
}
