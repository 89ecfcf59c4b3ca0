// Communicator creation: who am I (bootstrap::detect_launch), which transport, the rendezvous that
// gathers every rank's transport address and identity, the identity check, and the connection.
#pragma once

#include <gradwire/gradwire.h>

#include <memory>

#include "comm/communicator.hpp"
#include "instance/runtime.hpp"

namespace gw::comm {

std::unique_ptr<Communicator> create_communicator(const Runtime& runtime, const gw_comm_options& options);

}  // namespace gw::comm
