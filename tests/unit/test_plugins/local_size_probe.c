/* A transport that only reports what the runtime handed it: create refuses with the message
 * "local_rank=R local_size=S world_size=W", so gw_comm_create returns it before any rendezvous. For the
 * test of gw_transport_init.local_size (tests/unit/test_runtime.cpp). */
#include <gradwire/plugin.h>

#include <stdio.h>

static gw_status t_create(void* state, const gw_host* host, const gw_config* config, const gw_transport_init* init,
                          void** out) {
  char message[128];
  (void)state;
  (void)config;
  *out = NULL;
  if (!GW_STRUCT_HAS(init, gw_transport_init, local_size)) return GW_ERR_VERSION;
  snprintf(message, sizeof message, "local_rank=%u local_size=%u world_size=%u", (unsigned)init->local_rank,
           (unsigned)init->local_size, (unsigned)init->world_size);
  host->set_error(host->ctx, message);
  return GW_ERR_UNSUPPORTED;
}
static void t_destroy(void* t) { (void)t; }
static gw_status t_local_address(void* t, const void** blob, uint64_t* size) {
  (void)t, (void)blob, (void)size;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_connect(void* t, const void* const* blobs, const uint64_t* sizes) {
  (void)t, (void)blobs, (void)sizes;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_send(void* t, uint32_t peer, uint64_t tag, const gw_tensor* buf, gw_transport_request** r) {
  (void)t, (void)peer, (void)tag, (void)buf, (void)r;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_recv(void* t, uint32_t peer, uint64_t tag, gw_tensor* buf, gw_transport_request** r) {
  (void)t, (void)peer, (void)tag, (void)buf, (void)r;
  return GW_ERR_UNSUPPORTED;
}
static gw_status t_test(void* t, gw_transport_request* r, uint64_t* bytes) {
  (void)t, (void)r, (void)bytes;
  return GW_ERR_UNSUPPORTED;
}
static void t_request_free(void* t, gw_transport_request* r) { (void)t, (void)r; }
static gw_status t_progress(void* t) {
  (void)t;
  return GW_OK;
}
static gw_status t_abort(void* t) {
  (void)t;
  return GW_OK;
}

static const gw_transport_vtable vtable = {sizeof(gw_transport_vtable), 1u << GW_MEMORY_HOST, t_create, t_destroy,
                                           t_local_address, t_connect, t_send, t_recv, t_test, t_request_free,
                                           t_progress, t_abort, NULL, NULL, NULL, NULL, NULL};
static const gw_component components[] = {{sizeof(gw_component), GW_COMPONENT_TRANSPORT, "local_size_probe",
                                           "Reports the gw_transport_init it was given.", NULL, 0, &vtable}};
static const gw_plugin_descriptor descriptor = {sizeof(gw_plugin_descriptor), GW_ABI_VERSION_MAJOR, GW_ABI_VERSION_MINOR,
                                                "local_size_probe", "1.0.0", "test probe", NULL, NULL,
                                                components, 1, NULL};

GW_PLUGIN_EXPORT const gw_plugin_descriptor* gw_plugin_entry(uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == GW_ABI_VERSION_MAJOR ? &descriptor : NULL;
}
