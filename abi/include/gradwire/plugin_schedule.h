/*
 * gradwire/plugin_schedule.h — the schedule's vtable and the runtime services it calls. All a schedule
 * author includes (with plugin_core.h, which it includes). The contract: docs/transport-guide.md.
 */
#ifndef GRADWIRE_PLUGIN_SCHEDULE_H
#define GRADWIRE_PLUGIN_SCHEDULE_H

#include "plugin_core.h"

GW_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------------
 * Schedules: at each training step, decide what is communicated. A schedule never talks to a
 * transport; it calls back into the runtime through gw_schedule_runtime.
 * ---------------------------------------------------------------------------------------------- */

/* What the runtime does for a schedule, for the step being decided. Each call returns GW_OK or an
 * error to pass on, and is valid only inside on_step. */
typedef struct gw_schedule_runtime {
  uint32_t struct_size;
  void* ctx;
  uint64_t step;      /* steps counted so far (skipped steps excluded), starting at 0 */
  uint32_t world_size;
  /* Averages the gradients across ranks now (through the codec and error feedback). thread: in-call. */
  gw_status (*sync_gradients)(void* ctx);
  /* Adds this step's gradients to the local accumulator; nothing is sent. thread: in-call. */
  gw_status (*accumulate_gradients)(void* ctx);
  /* Replaces the gradients by the accumulator averaged across ranks, and clears the accumulator.
   * thread: in-call. */
  gw_status (*sync_accumulated)(void* ctx);
  /* Averages the parameters across ranks now (local SGD / model averaging). thread: in-call. */
  gw_status (*sync_parameters)(void* ctx);
  /* Starts averaging this step's gradients in the background, identified by `slot`. thread: in-call. */
  gw_status (*start_gradient_exchange)(void* ctx, uint64_t slot);
  /* Waits for the exchange started under `slot` and applies its result to the gradients.
   * thread: in-call. */
  gw_status (*finish_gradient_exchange)(void* ctx, uint64_t slot);
  /* Leaves the gradients as they are (a purely local step). thread: in-call. */
  gw_status (*keep_local)(void* ctx);
} gw_schedule_runtime;

typedef struct gw_schedule_vtable {
  uint32_t struct_size;

  /* thread: init. */
  gw_status (*create)(void* plugin_state, const gw_host* host, const gw_config* config, void** schedule);
  /* thread: exclusive: no call on the schedule in flight. */
  void (*destroy)(void* schedule);

  /* Called once per training step after the gradients are computed; calls back into rt.
   * thread: serialized. */
  gw_status (*on_step)(void* schedule, const gw_schedule_runtime* rt);
  /* The application skipped this step (e.g. loss-scale overflow): count nothing.
   * thread: serialized. */
  gw_status (*step_skipped)(void* schedule);

  /* Checkpoint: writes the counters into buf (capacity *size in, bytes written out). With buf NULL,
   * only sets *size to the bytes needed. thread: serialized. */
  gw_status (*save_state)(void* schedule, void* buf, uint64_t* size);
  /* Restores what save_state wrote; GW_ERR_CORRUPT for anything else. thread: serialized. */
  gw_status (*load_state)(void* schedule, const void* buf, uint64_t size);

  /* Reserved; this version of the host never calls it. Set NULL. thread: any. */
  const void* (*get_extension)(void* schedule, const char* id);
} gw_schedule_vtable;

GW_EXTERN_C_END

#endif /* GRADWIRE_PLUGIN_SCHEDULE_H */
