/*
 * gradwire/plugin_transport.h — the transport's vtable and its creation record. All a transport author
 * includes (with plugin_core.h, which it includes). The contract, rule by rule: docs/transport-guide.md.
 */
#ifndef GRADWIRE_PLUGIN_TRANSPORT_H
#define GRADWIRE_PLUGIN_TRANSPORT_H

#include "plugin_core.h"

GW_EXTERN_C_BEGIN

/* ------------------------------------------------------------------------------------------------
 * Transports: nonblocking tagged point-to-point, progress, optional native collectives.
 * A call that would block returns GW_IN_PROGRESS; nothing here blocks.
 * ---------------------------------------------------------------------------------------------- */

typedef struct gw_transport_request gw_transport_request; /* opaque, owned by the transport */

typedef struct gw_transport_init {
  uint32_t struct_size;
  uint32_t rank;
  uint32_t world_size;
  uint32_t local_rank; /* this rank's index among the ranks of its host, from the launcher (0 when unknown) */
  uint32_t local_size; /* the ranks on this rank's host, from the launcher (1 when it does not say); for
                          [transport] intra, created after the address exchange, the ranks of the node */
  double timeout_s; /* how long a peer may stay silent before its requests fail */
} gw_transport_init;

#define GW_TRANSPORT_INIT_INIT {(uint32_t)sizeof(gw_transport_init), 0u, 1u, 0u, 1u, 300.0}

typedef struct gw_transport_vtable {
  uint32_t struct_size;
  uint32_t memory_kinds; /* bit (1u << gw_memory_kind) for every kind send/recv accept */

  /* thread: init. */
  gw_status (*create)(void* plugin_state, const gw_host* host, const gw_config* config,
                      const gw_transport_init* init, void** transport);
  /* Closes every endpoint and frees the transport. thread: exclusive; no request may be alive. */
  void (*destroy)(void* transport);

  /* This rank's address blob for the bootstrap to gather. Valid until destroy.
   * thread: init. */
  gw_status (*local_address)(void* transport, const void** blob, uint64_t* size);
  /* Connects to every peer from their gathered blobs (index = rank). May return GW_IN_PROGRESS;
   * the host then calls progress and connect again.
   * thread: init. */
  gw_status (*connect)(void* transport, const void* const* blobs, const uint64_t* sizes);

  /* Starts sending `buf` to `peer` with `tag` / receiving from `peer` a message with `tag` into
   * `buf`. The buffer belongs to the transport until the request completes.
   * thread: serialized. */
  gw_status (*send_start)(void* transport, uint32_t peer, uint64_t tag, const gw_tensor* buf,
                          gw_transport_request** request);
  gw_status (*recv_start)(void* transport, uint32_t peer, uint64_t tag, gw_tensor* buf,
                          gw_transport_request** request);
  /* GW_OK when done (for a receive, *bytes is what arrived), GW_IN_PROGRESS, or the error.
   * thread: serialized. */
  gw_status (*test)(void* transport, gw_transport_request* request, uint64_t* bytes);
  /* Frees a request, cancelling it if it has not completed. thread: serialized. */
  void (*request_free)(void* transport, gw_transport_request* request);
  /* Advances communication. thread: serialized. */
  gw_status (*progress)(void* transport);
  /* Makes every pending and future request fail with GW_ERR_ABORTED. thread: any. */
  gw_status (*abort)(void* transport);

  /* Optional native collectives (NULL when absent); same ownership and test/request_free rules.
   * The host uses them only when no codec is in the way. thread: serialized. */
  gw_status (*allreduce_start)(void* transport, const gw_tensor* in, gw_tensor* out, gw_reduce_op op,
                               gw_transport_request** request);
  gw_status (*allgather_start)(void* transport, const gw_tensor* in, gw_tensor* out,
                               gw_transport_request** request);
  gw_status (*broadcast_start)(void* transport, gw_tensor* buf, uint32_t root,
                               gw_transport_request** request);
  gw_status (*reduce_scatter_start)(void* transport, const gw_tensor* in, gw_tensor* out,
                                    gw_reduce_op op, gw_transport_request** request);

  /* Reserved; this version of the host never calls it. Set NULL. thread: any. */
  const void* (*get_extension)(void* transport, const char* id);
} gw_transport_vtable;

GW_EXTERN_C_END

#endif /* GRADWIRE_PLUGIN_TRANSPORT_H */
