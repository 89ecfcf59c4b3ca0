#include "comm/create.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "bootstrap/launch_env.hpp"
#include "collectives/algorithms.hpp"
#include "bootstrap/rendezvous.hpp"
#include "comm/identity.hpp"
#include "comm/native.hpp"
#include "comm/routed_p2p.hpp"
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
  return ranks_here <= cpus ? 1000 : 5;
}

// [runtime] wait_sleep_us = -1: ranks that each have a CPU yield between polls (0); oversubscribed ranks
// sleep up to 100 us, so that the waiting ones leave the cores to the ranks that compute or send.
uint64_t sleep_us(int64_t configured, uint32_t ranks_here, uint32_t cpus) {
  if (configured >= 0) return uint64_t(configured);
  return ranks_here <= cpus ? 0 : 100;
}

// Sends `blob` to every other rank of `group` (world ranks) over `t` and returns theirs, in group order
// (this rank's own is `blob`). Two messages per pair: the size, then the bytes.
std::vector<std::string> exchange_in_group(TransportP2P& t, const std::vector<uint32_t>& group, const std::string& blob,
                                           double timeout_s, const std::string& timeout_source) {
  const uint32_t me = t.rank();
  std::vector<std::string> blobs(group.size());
  std::vector<uint64_t> sizes(group.size(), 0);
  const uint64_t my_size = blob.size();
  struct Pending {
    PointToPoint::Op* op;
    size_t index;
    bool size_message;
  };
  std::vector<Pending> pending;
  auto release = [&] {
    for (auto& p : pending) t.free(p.op);
  };
  try {
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == me) {
        blobs[i] = blob;
        continue;
      }
      pending.push_back({t.send(group[i], tags::kBootstrap, &my_size, sizeof my_size), i, false});
      pending.push_back({t.send(group[i], tags::kBootstrap | 1, blob.data(), blob.size()), i, false});
      pending.push_back({t.recv(group[i], tags::kBootstrap, &sizes[i], sizeof sizes[i]), i, true});
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!pending.empty()) {
      t.progress();
      for (size_t k = 0; k < pending.size();) {
        uint64_t bytes = 0;
        if (!t.test(pending[k].op, &bytes)) {
          ++k;
          continue;
        }
        const Pending done = pending[k];
        t.free(done.op);
        pending.erase(pending.begin() + ptrdiff_t(k));
        if (done.size_message) {  // the size arrived: receive the blob itself
          const size_t i = done.index;
          if (bytes != sizeof(uint64_t) || sizes[i] > (uint64_t{1} << 30))
            fail(GW_ERR_CORRUPT, "communicator creation: rank " + std::to_string(group[i]) +
                                     " sent a malformed intra-node transport address");
          blobs[i].resize(sizes[i]);
          pending.push_back({t.recv(group[i], tags::kBootstrap | 1, blobs[i].data(), blobs[i].size()), i, false});
        }
      }
      if (!pending.empty() && std::chrono::steady_clock::now() > deadline)
        fail(GW_ERR_TIMEOUT, "communicator creation: the ranks of this node did not exchange their intra-node "
                             "transport addresses within " + std::to_string(timeout_s) + " s (" + timeout_source + ")");
      if (!pending.empty()) std::this_thread::yield();
    }
  } catch (...) {
    release();
    throw;
  }
  return blobs;
}

// [transport] intra: a second transport for the ranks of this rank's node, created over the node's ranks
// (its rank = the local index) once the topology is known, its addresses exchanged over `inter`. Null
// when intra is "auto" or names inter's transport (one transport then carries everything, as UCX picks
// shared memory inside a host by itself) or when this node holds one rank.
std::unique_ptr<TransportP2P> connect_intra(const Runtime& runtime, TransportP2P& inter, const Topology& topology,
                                            const gw_transport_init& world_init, const CommSettings& settings) {
  const std::string name = runtime.config().get_string("transport", "intra");
  if (name == "auto" || name == inter.name()) return nullptr;
  const std::vector<uint32_t>& group = topology.local_group(inter.rank());
  if (group.size() <= 1) return nullptr;
  gw_transport_init init = world_init;
  init.rank = topology.local_index(inter.rank());
  init.world_size = uint32_t(group.size());
  init.local_rank = init.rank;
  init.local_size = init.world_size;  // every rank of this transport is on this node
  const ComponentRef ref = runtime.registry().find(GW_COMPONENT_TRANSPORT, name);
  if (const uint32_t kinds = ref.vtable<gw_transport_vtable>()->memory_kinds; (kinds & (1u << GW_MEMORY_HOST)) == 0)
    fail(GW_ERR_CONFIG, "[transport] intra = \"" + name + "\" carries " + memory_kinds_text(kinds) +
                            " memory only, but the node's share of every collective runs in host memory: name a "
                            "host transport there (ucx_shm) and [transport] device = \"" + name + "\" for device tensors");
  auto intra = std::make_unique<TransportP2P>(ref, runtime.config(), init);
  const auto blobs = exchange_in_group(inter, group, intra->local_address(), settings.timeout_s, settings.timeout_source);
  intra->connect(blobs, settings.timeout_s, settings.timeout_source);
  return intra;
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
  settings.two_level_cross = runtime.config().get_string("collectives", "two_level_cross");

  const ComponentRef ref = choose_transport(runtime);
  gw_transport_init init = GW_TRANSPORT_INIT_INIT;
  init.rank = launch.rank;
  init.world_size = launch.world_size;
  init.local_rank = launch.local_rank;
  init.local_size = launch.local_size;
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
  settings.wait_sleep_us = sleep_us(runtime.config().get_int("runtime", "wait_sleep_us"), ranks_here, cpus);
  settings.ranks_here = ranks_here;
  settings.cpus = cpus;
  runtime.logger().info("comm", std::to_string(ranks_here) + " ranks on this host, " + std::to_string(cpus) +
                                    " CPUs usable: waits spin " + std::to_string(settings.wait_spin_us) +
                                    " us before " +
                                    (settings.wait_sleep_us == 0
                                         ? std::string("yielding")
                                         : "sleeping up to " + std::to_string(settings.wait_sleep_us) + " us") +
                                    " between polls ([runtime] wait_spin_us, wait_sleep_us)");
  check_identities(identities);
  transport->connect(addresses, settings.timeout_s, settings.timeout_source);
  if (device) {
    device->connect(device_addresses, settings.timeout_s, settings.timeout_source);
    runtime.logger().info("comm", "device tensors: native collectives over " + device->name());
  }
  Topology topology = topology_from_keys(node_keys, node.source);
  std::unique_ptr<PointToPoint> p2p;
  std::string over = transport->name();
  if (auto intra = connect_intra(runtime, *transport, topology, init, settings)) {
    over = intra->name() + " inside the node, " + transport->name() + " between nodes";
    p2p = std::make_unique<RoutedP2P>(std::move(transport), std::move(intra), topology.local_group(launch.rank));
  } else {
    p2p = std::move(transport);
  }
  runtime.logger().info("comm", "rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.world_size) +
                                    " (from " + launch.source + ") connected over " + over);
  auto comm = std::make_unique<Communicator>(std::move(p2p), settings);
  comm->set_topology(std::move(topology));
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
