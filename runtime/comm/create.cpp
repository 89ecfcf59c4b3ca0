#include "comm/create.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "bootstrap/launch_env.hpp"
#include "collectives/algorithms.hpp"
#include "bootstrap/rendezvous.hpp"
#include "comm/identity.hpp"
#include "comm/native.hpp"
#include "comm/transport_p2p.hpp"
#include "core/error.hpp"

namespace gw::comm {
namespace {

// [transport] inter names the transport; "auto" prefers UCX, else the first transport loaded.
ComponentRef choose_transport(const Runtime& runtime) {
  const std::string wanted = runtime.config().get_string("transport", "inter");
  if (wanted != "auto") return runtime.registry().find(GW_COMPONENT_TRANSPORT, wanted);
  const auto all = runtime.registry().components(GW_COMPONENT_TRANSPORT);
  for (const auto& ref : all)
    if (std::string(ref.component->name) == "ucx") return ref;
  if (all.empty())
    fail(GW_ERR_NOT_FOUND, "no transport plugin is loaded ([transport] inter = \"auto\"); `gradwire plugins` "
                           "shows what was found and why a plugin did not load (is libgw-ucx.so built?)");
  return all.front();
}

// This machine, as the ranks on it see it: the host name (network namespaces share it).
std::string host_key() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

uint32_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return uint32_t(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

// [runtime] wait_spin_us = -1: spin long while every rank of this host can have a CPU of its own, briefly
// when they are more (a spinning rank would take the core from the rank it waits for).
uint64_t spin_us(int64_t configured, uint32_t ranks_here, uint32_t cpus) {
  if (configured >= 0) return uint64_t(configured);
  return ranks_here <= cpus ? 1000 : 50;
}

}  // namespace

std::unique_ptr<Communicator> create_communicator(const Runtime& runtime, const gw_comm_options& o) {
  bootstrap::LaunchOverrides overrides;
  overrides.rank = o.rank;
  overrides.world_size = o.world_size;
  overrides.local_rank = o.local_rank;
  overrides.root_address = o.root_address ? o.root_address : "";
  overrides.root_port = o.root_port;
  const bootstrap::LaunchInfo launch = bootstrap::detect_launch(overrides);

  CommSettings settings;
  settings.timeout_s = o.timeout_s > 0 ? o.timeout_s : runtime.config().get_float("runtime", "timeout_s");
  if (o.timeout_s > 0) settings.timeout_source = "gw_comm_options.timeout_s";
  settings.ring_threshold_bytes = uint64_t(runtime.config().get_int("collectives", "ring_threshold_bytes"));
  settings.pipeline_chunk_bytes = uint64_t(runtime.config().get_int("collectives", "pipeline_chunk_bytes"));
  settings.two_level = runtime.config().get_string("collectives", "two_level");

  const ComponentRef ref = choose_transport(runtime);
  gw_transport_init init = GW_TRANSPORT_INIT_INIT;
  init.rank = launch.rank;
  init.world_size = launch.world_size;
  init.local_rank = launch.local_rank;
  init.timeout_s = settings.timeout_s;
  auto transport = std::make_unique<TransportP2P>(ref, runtime.config(), init);
  if ((transport->vtable().memory_kinds & (1u << GW_MEMORY_HOST)) == 0)
    fail(GW_ERR_CONFIG, "[transport] inter = \"" + transport->name() + "\" carries " +
                            memory_kinds_text(transport->vtable().memory_kinds) +
                            " memory only, but the communicator's control messages and its own algorithms run in "
                            "host memory: use a host transport there (ucx) and [transport] device = \"" +
                            transport->name() + "\" for device tensors");

  const Identity mine = Identity::of(runtime, transport->name());
  const std::string host = host_key();
  const NodeKey node = node_key();
  // [transport] device: a second transport for device tensors (NCCL), connected from the same gathered
  // records (its address blob is the record's fifth part).
  std::unique_ptr<TransportP2P> device;
  if (const std::string name = runtime.config().get_string("transport", "device"); name != "none")
    device = std::make_unique<TransportP2P>(runtime.registry().find(GW_COMPONENT_TRANSPORT, name), runtime.config(), init);
  const std::string record = bootstrap::pack_records(
      {mine.serialize(), transport->local_address(), host, node.key, device ? device->local_address() : ""});
  const std::vector<std::string> gathered =
      o.allgather ? bootstrap::callback_allgather(o.allgather, o.allgather_user, launch.rank, launch.world_size, record)
                  : bootstrap::ucx_allgather(launch, record, settings.timeout_s, settings.timeout_source);

  std::vector<Identity> identities;
  std::vector<std::string> addresses;
  uint32_t ranks_here = 0;
  std::vector<std::string> node_keys, device_addresses;
  for (const auto& r : gathered) {
    const auto parts = bootstrap::unpack_records(r, 5);
    node_keys.push_back(parts[3]);
    device_addresses.push_back(parts[4]);
    identities.push_back(Identity::parse(parts[0]));
    addresses.push_back(parts[1]);
    ranks_here += parts[2] == host;
  }
  const uint32_t cpus = usable_cpus();
  settings.wait_spin_us = spin_us(runtime.config().get_int("runtime", "wait_spin_us"), ranks_here, cpus);
  settings.ranks_here = ranks_here;
  settings.cpus = cpus;
  runtime.logger().info("comm", std::to_string(ranks_here) + " ranks on this host, " + std::to_string(cpus) +
                                    " CPUs usable: waits spin " + std::to_string(settings.wait_spin_us) +
                                    " us before yielding ([runtime] wait_spin_us)");
  check_identities(identities);
  transport->connect(addresses, settings.timeout_s, settings.timeout_source);
  if (device) {
    device->connect(device_addresses, settings.timeout_s, settings.timeout_source);
    runtime.logger().info("comm", "device tensors: native collectives over " + device->name());
  }
  runtime.logger().info("comm", "rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                                    " (from " + launch.source + ") connected over " + transport->name());
  auto comm = std::make_unique<Communicator>(std::move(transport), settings);
  comm->set_topology(topology_from_keys(node_keys, node.source));
  if (device) comm->set_device_transport(std::move(device));
  runtime.logger().info("comm", "nodes (from " + node.source + "): " + comm->topology().describe());
  // A closing barrier: no rank leaves creation (and may exit) while another is still connecting to it.
  Signature barrier;
  barrier.kind = CollectiveKind::Barrier;
  gw_request* r = comm->start_collective(barrier, [](Collective& c) { return coll::barrier_dissemination(c); });
  const gw_status st = comm->wait(r, -1.0);
  const std::string error = r->error;
  comm->free(r);
  if (st != GW_OK) fail(st, "communicator creation: the closing barrier failed: " + error);
  return comm;
}

}  // namespace gw::comm
