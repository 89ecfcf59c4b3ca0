#include "config/schema.hpp"

namespace gw::config {
namespace {
constexpr double kUnbounded = 0;  // with min 1 > max 0: no range
}

// The runtime's own sections. A new built-in key is one line here; docs/config-reference.md is
// regenerated from it (`gradwire config dump --reference`).
Schema Schema::builtin() {
  Schema s;
  s.sections_ = {
      {"runtime",
       "How the runtime finds plugins and how long it waits.",
       {
           {"plugin_path", ValueType::StringList, "[]",
            "Directories (or plugin files) searched for plugins before GRADWIRE_PLUGIN_PATH and the "
            "installed plugin directory.", 1, kUnbounded, {}},
           {"timeout_s", ValueType::Float, "300",
            "Seconds any wait (bootstrap, collective, request) may last before it fails with "
            "GW_ERR_TIMEOUT.", 0.001, 1e7, {}},
           {"wait_spin_us", ValueType::Int, "-1",
            "Microseconds a wait polls without completing anything before it lets the core go between "
            "polls (wait_sleep_us); -1: 1000 when this host runs no more ranks than this process may use CPUs, else 5 "
            "(oversubscribed ranks must let each other run).", -1, 1e7, {}},
           {"wait_sleep_us", ValueType::Int, "0",
            "Longest sleep, in microseconds, between a wait's polls once it has polled wait_spin_us "
            "without completing anything (it sleeps 10 us, then twice as long each time, up to this); 0: it "
            "yields the core instead and stays runnable; -1: 0 when this host runs no more ranks than this "
            "process may use CPUs, else 100 (a rank that only yields keeps a share of the core the rank it "
            "waits for needs; an option for oversubscribed hosts, not yet the default).", -1, 1e6, {}},
           {"log_level", ValueType::String, "\"warn\"",
            "Least severe log level printed; the more verbose of this and the application's choice "
            "applies.", 1, kUnbounded, {"error", "warn", "info", "debug", "trace"}},
       },
       false},
      {"transport",
       "Which transport plugins carry the bytes.",
       {
           {"inter", ValueType::String, "\"auto\"",
            "Transport between nodes: a transport plugin's name, or auto (the best one loaded).", 1,
            kUnbounded, {}},
           {"intra", ValueType::String, "\"auto\"",
            "Transport between the ranks of one node (ucx_shm: UCX over shared memory); auto, or the "
            "name of inter's transport: inter carries everything (UCX takes shared memory inside a host "
            "by itself).", 1,
            kUnbounded, {}},
           {"device", ValueType::String, "\"none\"",
            "Transport for CUDA device tensors (nccl): the collectives it offers natively run on device "
            "buffers through it; none: device tensors are refused by the uncompressed collectives.", 1,
            kUnbounded, {}},
       },
       false},
      {"codec",
       "How gradients are compressed.",
       {
           {"name", ValueType::String, "\"none\"",
            "The codec plugin to use (none: uncompressed; auto: per bucket, the one of `allow` the cost model "
            "predicts fastest, docs/cost-model.md).", 1, kUnbounded, {}},
           {"allow", ValueType::StringList, "[\"none\", \"fp16\", \"int8\", \"topk\"]",
            "The codecs auto may choose from (none is always a candidate).", 1, kUnbounded, {}},
           {"model", ValueType::String, "\"\"",
            "A cost model file (gradwire calibrate) for auto; empty: measure codecs and link at "
            "gw_sync_finalize.", 1, kUnbounded, {}},
           {"auto_recheck_steps", ValueType::Int, "100",
            "auto: every this many steps the ranks compare each auto bucket's measured exchange time (the "
            "median since the last check) with its prediction, and choose again, measuring now, when they "
            "differ by more than auto_drift; 0: the choice at gw_sync_finalize stays.", 0, 9.2e18, {}},
           {"auto_drift", ValueType::Float, "2",
            "auto: the factor (either way) between measured and predicted exchange time that makes the ranks "
            "choose again.", 1, 1e9, {}},
           {"error_feedback", ValueType::Bool, "false",
            "Keep each bucket's compression residual and add it to the next step's input.", 1,
            kUnbounded, {}},
           {"error_feedback_codecs", ValueType::StringList, "[]",
            "With error_feedback: the codecs whose buckets keep residuals (e.g. [\"topk\", \"randomk\", "
            "\"onebit\"], whose error is biased and large; fp16, bf16 and int8 round to nearest and train "
            "without it); empty: every lossy codec. auto times each candidate with or without the "
            "residual's passes accordingly.", 1, kUnbounded, {}},
           {"seed", ValueType::Int, "0",
            "Seed shared by all ranks for random coordinates and stochastic rounding.", 0, 9.2e18, {}},
           {"momentum", ValueType::Float, "0",
            "Compress after momentum: each rank keeps v = momentum * v + gradient per bucket and exchanges v "
            "(the application then applies the average without momentum of its own); 0: off.", 0, 0.999, {}},
       },
       false},
      {"schedule",
       "When and what is communicated.",
       {
           {"name", ValueType::String, "\"every_step\"", "The schedule plugin to use.", 1, kUnbounded,
            {}},
       },
       false},
      {"bucket",
       "How registered tensors are fused for communication.",
       {
           {"bytes", ValueType::Int, "25000000", "Size threshold of a fused bucket in bytes.", 1,
            1099511627776.0, {}},
           {"rounds_batch", ValueType::Int, "1",
            "Buckets whose codec runs in rounds (powersgd) share each round's collective: up to this many "
            "consecutive buckets of one such codec start together once all of them are ready, and sum their "
            "round vectors in one allreduce; 0: every consecutive bucket of the codec, 1 (the default): each "
            "bucket its own collectives (docs/powersgd.md).", 0, 1e9, {}},
       },
       false},
      {"collectives",
       "How collectives over point-to-point transports choose their algorithm (docs/collectives.md).",
       {
           {"ring_threshold_bytes", ValueType::Int, "65536",
            "Allreduce buffers of at least this many bytes use the ring (reduce-scatter + allgather), "
            "smaller ones recursive doubling.", 0, 1099511627776.0, {}},
           {"pipeline_chunk_bytes", ValueType::Int, "1048576",
            "Compressed allreduce: f32 bytes per pipelined piece, so that encoding, transfer and decoding "
            "of successive pieces overlap.", 1024, 1099511627776.0, {}},
           {"two_level", ValueType::String, "\"auto\"",
            "Compressed allreduce across nodes: on reduces exactly inside each node and compresses only "
            "between nodes (refused when nodes hold different numbers of ranks); off is the flat algorithm; "
            "auto is on with at least 2 nodes of at least 2 ranks each, all equal.", 1, kUnbounded,
            {"auto", "on", "off"}},
           {"two_level_cross", ValueType::String, "\"auto\"",
            "Two-level allreduce, between the nodes: gather encodes each node's sum once and every rank "
            "decodes all nodes' payloads (one quantization; nodes - 1 payloads sent per rank); scatter runs "
            "a scatter-reduce-allgather whose owners re-encode the sums (2 (nodes - 1) / nodes payloads); "
            "auto is gather with 2 nodes (the same bytes), scatter with more.", 1, kUnbounded,
            {"auto", "gather", "scatter"}},
       },
       false},
      {"elastic",
       "Elastic membership (docs/elastic.md): survivors of a failed rank continue inside gw_sync_step.",
       {
           {"enabled", ValueType::Bool, "false",
            "On: a gw_sync_step that fails because ranks died returns GW_MEMBERSHIP_CHANGED on the "
            "survivors, which continue among themselves; off: the failure ends the job as an error.", 1,
            kUnbounded, {}},
           {"min_ranks", ValueType::Int, "1",
            "The fewest survivors that may continue; they must also be a strict majority of the last "
            "membership. Fewer: every survivor returns the failure as an error.", 1, 1e6, {}},
       },
       false},
      {"rules",
       "Per-tensor exemptions: the first rule whose pattern and size match a tensor picks its codec.",
       {
           {"match", ValueType::String, "\"*\"", "Glob on the registered tensor name (* and ?).", 1,
            kUnbounded, {}},
           {"max_bytes", ValueType::Int, "0",
            "The rule applies only to tensors of at most this many bytes; 0: any size.", 0,
            1099511627776.0, {}},
           {"codec", ValueType::String, "\"none\"", "The codec for the matching tensors.", 1,
            kUnbounded, {}},
       },
       true},
  };
  return s;
}

}  // namespace gw::config
