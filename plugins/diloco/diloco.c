/* The schedule "diloco": DiLoCo's outer loop (docs/diloco.md). Every step is a local step of the
 * application's (inner) optimizer; every `inner_steps` steps each fragment of the parameters takes an
 * outer step: its pseudo-gradient (anchor - parameters) is averaged across ranks through the bucket's
 * codec and the outer optimizer (SGD with Nesterov or heavy-ball momentum) moves the anchor, which the
 * parameters take. Fragment f's outer steps fall at steps k * inner_steps + f * inner_steps / fragments
 * (streaming: staggered), and with `delay` > 0 each is finished `delay` steps after it started, its
 * exchange overlapped with the inner steps between. Step 0 sets the anchors (a dense average). */
#include <gradwire/plugin.h>
#include <gw_schedule/counters.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_MAGIC 0x314f4c44u /* "DLO1" */
#define NUM_COUNTERS 8

typedef struct diloco {
  const gw_host* host;
  uint64_t inner_steps;
  uint64_t fragments;
  uint64_t delay;
  double outer_lr;
  double outer_momentum;
  int32_t nesterov;
  uint64_t step;        /* steps taken, skipped ones excluded */
  uint64_t outer_steps; /* fragment outer steps finished */
} diloco;

static const gw_config_key diloco_keys[] = {
    {sizeof(gw_config_key), "inner_steps", GW_CONFIG_INT, "100",
     "H: inner (local) steps between two outer steps of a fragment.", 1.0, 1000000.0, NULL},
    {sizeof(gw_config_key), "fragments", GW_CONFIG_INT, "1",
     "F: the parameters' buckets split into this many fragments, synced at staggered steps (streaming).", 1.0,
     65536.0, NULL},
    {sizeof(gw_config_key), "delay", GW_CONFIG_INT, "0",
     "Steps between the start of a fragment's exchange and its outer update (0: in the same step); less than "
     "inner_steps.",
     0.0, 1000000.0, NULL},
    {sizeof(gw_config_key), "outer_lr", GW_CONFIG_FLOAT, "0.7", "The outer optimizer's learning rate.", 0.0, 100.0,
     NULL},
    {sizeof(gw_config_key), "outer_momentum", GW_CONFIG_FLOAT, "0.9", "The outer optimizer's momentum, in [0, 1).",
     0.0, 0.9999, NULL},
    {sizeof(gw_config_key), "nesterov", GW_CONFIG_BOOL, "true",
     "Nesterov momentum for the outer optimizer (false: heavy-ball momentum).", 0.0, 1.0, NULL}};

static gw_status dl_create(void* plugin_state, const gw_host* host, const gw_config* config, void** out) {
  int64_t inner = 0, fragments = 0, delay = 0;
  double lr = 0, momentum = 0;
  int32_t nesterov = 1;
  diloco* self;
  gw_status s = host->config_get_int(config, "inner_steps", &inner);
  (void)plugin_state;
  if (s == GW_OK) s = host->config_get_int(config, "fragments", &fragments);
  if (s == GW_OK) s = host->config_get_int(config, "delay", &delay);
  if (s == GW_OK) s = host->config_get_float(config, "outer_lr", &lr);
  if (s == GW_OK) s = host->config_get_float(config, "outer_momentum", &momentum);
  if (s == GW_OK) s = host->config_get_bool(config, "nesterov", &nesterov);
  if (s != GW_OK) return s;
  if (delay >= inner) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "[schedule.diloco] delay = %lld is not less than inner_steps = %lld: a fragment's exchange must be "
             "applied before its next one starts",
             (long long)delay, (long long)inner);
    host->set_error(host->ctx, msg);
    return GW_ERR_INVALID_ARGUMENT;
  }
  if (fragments > inner) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "[schedule.diloco] fragments = %lld is more than inner_steps = %lld: the fragments' outer steps are "
             "staggered over the inner steps; use at most inner_steps fragments",
             (long long)fragments, (long long)inner);
    host->set_error(host->ctx, msg);
    return GW_ERR_INVALID_ARGUMENT;
  }
  self = (diloco*)calloc(1, sizeof *self);
  if (self == NULL) return GW_ERR_NO_MEMORY;
  self->host = host;
  self->inner_steps = (uint64_t)inner;
  self->fragments = (uint64_t)fragments;
  self->delay = (uint64_t)delay;
  self->outer_lr = lr;
  self->outer_momentum = momentum;
  self->nesterov = nesterov ? 1 : 0;
  *out = self;
  return GW_OK;
}

static void dl_destroy(void* schedule) { free(schedule); }

/* Whether fragment f's exchange starts at step t (t > 0; step 0 sets the anchors). */
static int starts_at(const diloco* self, uint64_t t, uint64_t f) {
  const uint64_t offset = f * self->inner_steps / self->fragments;
  return t > 0 && t >= offset && (t - offset) % self->inner_steps == 0;
}

static gw_outer_step outer_args(const diloco* self, uint64_t f) {
  gw_outer_step a = GW_OUTER_STEP_INIT;
  a.fragment = (uint32_t)f;
  a.fragments = (uint32_t)self->fragments;
  a.nesterov = (uint32_t)self->nesterov;
  a.lr = self->outer_lr;
  a.momentum = self->outer_momentum;
  return a;
}

static gw_status dl_on_step(void* schedule, const gw_schedule_runtime* rt) {
  diloco* self = (diloco*)schedule;
  const uint64_t t = self->step;
  gw_status s = GW_OK;
  uint64_t f;
  if (rt->struct_size < offsetof(gw_schedule_runtime, finish_outer_step) + sizeof rt->finish_outer_step) {
    self->host->set_error(self->host->ctx, "diloco: this gradwire runtime has no outer steps; it needs ABI 1.4 or later");
    return GW_ERR_UNSUPPORTED;
  }
  if (t == 0) {
    for (f = 0; f < self->fragments && s == GW_OK; ++f) {
      const gw_outer_step a = outer_args(self, f);
      s = rt->start_outer_step(rt->ctx, &a);
      if (s == GW_OK) s = rt->finish_outer_step(rt->ctx, &a);
    }
  } else {
    if (self->delay > 0 && t > self->delay)
      for (f = 0; f < self->fragments && s == GW_OK; ++f)
        if (starts_at(self, t - self->delay, f)) {
          const gw_outer_step a = outer_args(self, f);
          s = rt->finish_outer_step(rt->ctx, &a);
          if (s == GW_OK) self->outer_steps++;
        }
    for (f = 0; f < self->fragments && s == GW_OK; ++f)
      if (starts_at(self, t, f)) {
        const gw_outer_step a = outer_args(self, f);
        s = rt->start_outer_step(rt->ctx, &a);
        if (s == GW_OK && self->delay == 0) {
          s = rt->finish_outer_step(rt->ctx, &a);
          if (s == GW_OK) self->outer_steps++;
        }
      }
  }
  if (s == GW_OK) s = rt->keep_local(rt->ctx);
  if (s == GW_OK) self->step++;
  return s;
}

static gw_status dl_step_skipped(void* schedule) {
  (void)schedule;
  return GW_OK;
}

static void dl_counters(const diloco* self, uint64_t* c) {
  c[0] = self->inner_steps;
  c[1] = self->fragments;
  c[2] = self->delay;
  memcpy(&c[3], &self->outer_lr, 8);
  memcpy(&c[4], &self->outer_momentum, 8);
  c[5] = (uint64_t)self->nesterov;
  c[6] = self->step;
  c[7] = self->outer_steps;
}

static gw_status dl_save_state(void* schedule, void* buf, uint64_t* size) {
  const diloco* self = (const diloco*)schedule;
  uint64_t c[NUM_COUNTERS];
  dl_counters(self, c);
  return gw_counters_save(self->host, STATE_MAGIC, c, NUM_COUNTERS, buf, size);
}

static gw_status dl_load_state(void* schedule, const void* buf, uint64_t size) {
  diloco* self = (diloco*)schedule;
  uint64_t c[NUM_COUNTERS], mine[NUM_COUNTERS];
  gw_status s = gw_counters_load(self->host, STATE_MAGIC, c, NUM_COUNTERS, buf, size,
                                 "diloco: the state blob was not written by diloco 1.x");
  if (s != GW_OK) return s;
  dl_counters(self, mine);
  if (memcmp(c, mine, 6 * sizeof c[0]) != 0) {
    char msg[400];
    double lr, momentum;
    memcpy(&lr, &c[3], 8);
    memcpy(&momentum, &c[4], 8);
    snprintf(msg, sizeof msg,
             "diloco: the checkpoint was taken with another outer configuration (inner_steps %llu, fragments %llu, "
             "delay %llu, outer_lr %g, outer_momentum %g, nesterov %s); resume with the same [schedule.diloco]",
             (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2], lr, momentum,
             c[5] ? "true" : "false");
    self->host->set_error(self->host->ctx, msg);
    return GW_ERR_MISMATCH;
  }
  self->step = c[6];
  self->outer_steps = c[7];
  return GW_OK;
}

static const gw_schedule_vtable dl_vtable = {sizeof(gw_schedule_vtable), dl_create, dl_destroy, dl_on_step,
                                             dl_step_skipped, dl_save_state, dl_load_state, NULL};

static const gw_component dl_components[] = {
    {sizeof(gw_component), GW_COMPONENT_SCHEDULE, "diloco",
     "DiLoCo: local steps, then an outer optimizer step on the averaged pseudo-gradient every `inner_steps` "
     "steps, optionally streamed in fragments.",
     diloco_keys, 6, &dl_vtable}};

static const gw_plugin_descriptor dl_descriptor = {
    sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR, "diloco", "1.0.0",
    "DiLoCo: an outer optimizer over compressed pseudo-gradients, streamed in fragments.", NULL, NULL, dl_components,
    1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  return host_abi_major == GW_ABI_VERSION_MAJOR && host_abi_minor >= 4 ? &dl_descriptor : NULL;
}
