// gw_ps_* of the C ABI (docs/ps.md).
#include <gradwire/gradwire.h>

#include "core/abi_struct.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "ps/ps.hpp"

namespace {

gw::ps::ParameterServer& get(gw_ps* ps) {
  gw::require(ps, "ps");
  return *ps->impl;
}

}  // namespace

extern "C" {

GW_API gw_status gw_ps_create(gw_comm* comm, const gw_ps_options* options, gw_tensor* parameters, gw_ps** ps) {
  return gw::guard([&] {
    gw::require(ps, "ps (output)");
    *ps = nullptr;
    gw::require(comm, "comm");
    const gw_ps_options o = gw::abi::read(options, "options");
    gw_tensor params = gw::read_tensor(parameters, "parameters");
    if (o.runtime == nullptr)
      gw::fail(GW_ERR_INVALID_ARGUMENT, "options->runtime is NULL; the parameter server reads [codec] name, "
                                        "error_feedback and seed from the runtime's configuration");
    auto p = std::make_unique<gw_ps>();
    p->impl = std::make_unique<gw::ps::ParameterServer>(*comm->impl, o.runtime->impl, o, params);
    *ps = p.release();
    return GW_OK;
  });
}

GW_API gw_status gw_ps_role(gw_ps* ps, int* is_server, uint32_t* worker, uint32_t* workers) {
  return gw::guard([&] {
    auto& p = get(ps);
    if (is_server) *is_server = p.is_server() ? 1 : 0;
    if (worker) *worker = p.worker_index();
    if (workers) *workers = p.workers();
    return GW_OK;
  });
}

GW_API gw_status gw_ps_push_pull(gw_ps* ps, const gw_tensor* gradient, float lr) {
  return gw::guard([&] {
    auto& p = get(ps);
    p.push_pull(gw::read_tensor(gradient, "gradient"), lr);
    return GW_OK;
  });
}

GW_API gw_status gw_ps_serve(gw_ps* ps) {
  return gw::guard([&] {
    get(ps).serve();
    return GW_OK;
  });
}

GW_API gw_status gw_ps_get_stats(gw_ps* ps, gw_ps_stats* stats) {
  return gw::guard([&] {
    auto& p = get(ps);
    gw::abi::write(stats, p.stats(), "stats");
    return GW_OK;
  });
}

GW_API gw_status gw_ps_destroy(gw_ps* ps) {
  return gw::guard([&] {
    gw::require(ps, "ps");
    delete ps;
    return GW_OK;
  });
}

}  // extern "C"
