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

/* Since 1.4. One outer step of an outer loop (DiLoCo, docs/diloco.md) over one fragment of the parameters:
 * the buckets split into `fragments` contiguous runs, in bucket order; `fragment` is one of them. The
 * outer optimizer is SGD on the averaged pseudo-gradient (anchor - parameters) with momentum `momentum`,
 * Nesterov's when `nesterov` is nonzero, and learning rate `lr`. thread: in-call. */
typedef struct gw_outer_step {
  uint32_t struct_size;
  uint32_t fragment;  /* 0 .. fragments - 1 */
  uint32_t fragments; /* 1 .. the number of buckets */
  uint32_t nesterov;  /* 0: heavy-ball momentum; otherwise Nesterov's */
  double lr;
  double momentum;
} gw_outer_step;

#define GW_OUTER_STEP_INIT {(uint32_t)sizeof(gw_outer_step), 0u, 1u, 1u, 0.7, 0.9}

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
  /* Since 1.4 (present when struct_size covers it). Starts the outer step of fragment
   * step->fragment: each of its parameters' difference from its anchor (the parameters at the last outer
   * step, the same on every rank) is averaged across ranks in the background, through the bucket's codec
   * and error feedback. The first outer step of a fragment, with no anchor yet, averages the parameters
   * densely and makes the average the anchor. Every tensor must have been registered with a parameter.
   * thread: in-call. */
  gw_status (*start_outer_step)(void* ctx, const gw_outer_step* step);
  /* Since 1.4 (present when struct_size covers it). Waits for the outer step of step->fragment
   * started before (in this step or an earlier one) and applies it: the outer optimizer moves the anchor
   * by the averaged pseudo-gradient, and each parameter becomes the new anchor plus what it moved locally
   * since the exchange started (nothing when started in this step). thread: in-call. */
  gw_status (*finish_outer_step)(void* ctx, const gw_outer_step* step);
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
