/* The schedule "every_step": average the gradients across ranks at every step (plain data parallel,
 * what PyTorch DDP does). Its only state is the count of steps taken, kept for checkpoints. */
#include <gradwire/plugin.h>
#include <gw_schedule/counters.h>

#include <stdlib.h>

#define STATE_MAGIC 0x31455347u /* "GSE1" */

typedef struct every_step {
  const gw_host* host;
  uint64_t steps;
  uint64_t skipped;
} every_step;

static gw_status es_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  every_step* self = (every_step*)calloc(1, sizeof(every_step));
  (void)plugin_state;
  (void)config;
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  *out = self;
  return GW_OK;
}

static void es_destroy(void* schedule) { free(schedule); }

static gw_status es_on_step(void* schedule, const gw_schedule_runtime* rt) {
  every_step* self = (every_step*)schedule;
  const gw_status status = rt->sync_gradients(rt->ctx);
  if (status == GW_OK) self->steps++;
  return status;
}

static gw_status es_step_skipped(void* schedule) {
  ((every_step*)schedule)->skipped++;
  return GW_OK;
}

/* State: magic "GSE1", steps, skipped (gw_schedule/counters.h). */
static gw_status es_save_state(void* schedule, void* buf, uint64_t* size) {
  const every_step* self = (const every_step*)schedule;
  const uint64_t counters[2] = {self->steps, self->skipped};
  return gw_counters_save(self->host, STATE_MAGIC, counters, 2, buf, size);
}

static gw_status es_load_state(void* schedule, const void* buf, uint64_t size) {
  every_step* self = (every_step*)schedule;
  uint64_t counters[2];
  const gw_status s = gw_counters_load(self->host, STATE_MAGIC, counters, 2, buf, size,
                                       "every_step: the state blob was not written by every_step 1.x");
  if (s == GW_OK) {
    self->steps = counters[0];
    self->skipped = counters[1];
  }
  return s;
}

static const gw_schedule_vtable es_vtable = {sizeof(gw_schedule_vtable), es_create, es_destroy, es_on_step,
                                             es_step_skipped, es_save_state, es_load_state, NULL};

static const gw_component es_components[] = {
    {sizeof(gw_component), GW_COMPONENT_SCHEDULE, "every_step",
     "Average the gradients across ranks at every step.", NULL, 0, &es_vtable}};

static const gw_plugin_descriptor es_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "every_step", "1.0.0",
    "Synchronous data parallelism: gradients averaged every step.", NULL, NULL, es_components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &es_descriptor : NULL;
}
