// The blocking forms of the C ABI's collectives: a *_start function, then a wait on its request.
#pragma once

#include <gradwire/gradwire.h>

#include <string>

#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace gw::capi {

// Runs `start_fn(&request)` (a *_start function of the C ABI, which sets its own last error) and waits
// for the request without a limit of its own, then frees it; its error becomes the call's.
template <class Start>
gw_status blocking(gw_comm* comm, Start&& start_fn) {
  return gw::guard([&] {
    comm::Communicator& c = *gw::require(comm, "comm")->impl;
    gw_request* r = nullptr;
    const gw_status st = start_fn(&r);
    if (st != GW_OK) return st;
    const gw_status done = c.wait(r, -1.0);
    const std::string error = r->error;
    c.free(r);
    if (done != GW_OK) gw::fail(done, error);
    return GW_OK;
  });
}

}  // namespace gw::capi
