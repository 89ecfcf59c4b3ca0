// The catalog of `gradwire train` configurations and how each becomes a runtime configuration: its TOML
// overlay merged over the user's file.
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include <sstream>

#include "train/command/command.hpp"

namespace gwcli::train {
namespace {

// Merges `overlay` into `base`: tables recursively, anything else (values, arrays, [[rules]]) replaced.
void merge(toml::table& base, const toml::table& overlay) {
  for (const auto& [key, value] : overlay) {
    if (value.is_table() && base.contains(key) && base[key].is_table())
      merge(*base[key].as_table(), *value.as_table());
    else
      base.insert_or_assign(key, value);
  }
}

}  // namespace

const std::vector<Configuration>& configurations() {
  static const std::vector<Configuration> all = {
    {"none", "uncompressed fp32 gradients, averaged every step",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"fp16", "gradients as fp16",
     "[codec]\nname = \"fp16\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"int8", "gradients as int8 with one scale per block of 256",
     "[codec]\nname = \"int8\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
    {"int8-ef", "gradients as int8 with one scale per block of 256, with error feedback",
     "[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n"},
    {"powersgd", "PowerSGD rank 4: each weight matrix as P Q^T with warm start and the codec's own error "
                 "feedback, biases exact (as PyTorch's PowerSGD hook)",
     "[codec]\nname = \"powersgd\"\nerror_feedback = false\n[codec.powersgd]\nrank = 4\n[schedule]\n"
     "name = \"every_step\"\n"},
    {"topk-ef", "top-k 1 % of the gradient with error feedback",
     "[codec]\nname = \"topk\"\nerror_feedback = true\n[codec.topk]\nratio = 0.01\n[schedule]\nname = \"every_step\"\n"},
    {"onebit-ef", "one bit per element (sign, scale per block) with error feedback, compressed after momentum; "
                  "tensors under 16 KiB uncompressed",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n"
     "[[rules]]\nmatch = \"*\"\nmax_bytes = 16384\ncodec = \"none\"\n", 1.0f, true},
    {"auto", "the codec the cost model predicts fastest for each bucket on these links, among none, fp16, int8 "
             "and top-k 1 % (with error feedback for top-k), chosen at finalize",
     "[codec]\nname = \"auto\"\nallow = [\"none\", \"fp16\", \"int8\", \"topk\"]\nerror_feedback = true\n"
     "error_feedback_codecs = [\"topk\"]\n"
     "[codec.topk]\nratio = 0.01\n[schedule]\nname = \"every_step\"\n"},
    {"local-sgd", "local SGD: uncompressed parameters averaged every 8 steps, none in between",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"local-sgd-int8", "local SGD every 8 steps, the parameter differences as int8 with error feedback",
     "[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"local-sgd-onebit", "local SGD every 8 steps, the parameter differences as one bit with error feedback",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"local_sgd\"\n"
     "[schedule.local_sgd]\nperiod = 8\n"},
    {"diloco", "DiLoCo: 16 local steps, then an outer Nesterov step (lr 0.7, momentum 0.9) on the averaged "
               "fp32 pseudo-gradient",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"diloco\"\n"
     "[schedule.diloco]\ninner_steps = 16\nouter_lr = 0.7\nouter_momentum = 0.9\n"},
    {"diloco-int8", "DiLoCo every 16 steps, the pseudo-gradient as int8 with error feedback",
     "[codec]\nname = \"int8\"\nerror_feedback = true\n[schedule]\nname = \"diloco\"\n"
     "[schedule.diloco]\ninner_steps = 16\nouter_lr = 0.7\nouter_momentum = 0.9\n"},
    {"diloco-streaming", "streaming DiLoCo: 2 fragments at staggered steps, each int8 exchange applied 2 steps "
                         "after it started, overlapped with the inner steps between",
     "[codec]\nname = \"int8\"\nerror_feedback = true\n[bucket]\nbytes = 65536\n[schedule]\nname = \"diloco\"\n"
     "[schedule.diloco]\ninner_steps = 16\nfragments = 2\ndelay = 2\nouter_lr = 0.7\nouter_momentum = 0.9\n"},
    {"onebit-ef-lr02", "one bit with error feedback, momentum after the codec, at 0.2 x --lr",
     "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n", 0.2f},
    {"async", "the async schedule (staleness 1): each step applies the average of the step before",
     "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"async\"\n"},
    {"ps-sync", "parameter server, synchronous: --ranks workers plus one server rank, fp32 pushes",
     "[codec]\nname = \"none\"\nerror_feedback = false\n", 1.0f, false, 1, GW_PS_SYNC},
    {"ps-async", "parameter server, asynchronous (staleness bound --staleness): --ranks workers plus one server",
     "[codec]\nname = \"none\"\nerror_feedback = false\n", 1.0f, false, 1, GW_PS_ASYNC},
};
  return all;
}

const Configuration& find_configuration(const std::string& name) {
  for (const auto& c : configurations())
    if (name == c.name) return c;
  std::string known;
  for (const auto& c : configurations()) known += std::string(known.empty() ? "" : ", ") + c.name;
  throw Failure(GW_ERR_INVALID_ARGUMENT, "train: unknown configuration '" + name + "' in --configs; known: " + known);
}

std::string configuration_toml(const std::string& user_file, const Configuration& c, float momentum, bool elastic) {
  toml::table merged;
  try {
    if (!user_file.empty()) merged = toml::parse_file(user_file);
    merge(merged, toml::parse(c.overlay));
    merged["codec"].as_table()->insert_or_assign("momentum", c.momentum_in_sync ? double(momentum) : 0.0);
    if (elastic) merge(merged, toml::parse("[elastic]\nenabled = true\n"));
  } catch (const toml::parse_error& e) {
    throw Failure(GW_ERR_CONFIG, "train: cannot read " + (user_file.empty() ? std::string("the overlay") : user_file) +
                                     ": " + std::string(e.description()));
  }
  std::ostringstream text;
  text << merged << "\n";
  return text.str();
}

RuntimePtr open_runtime_text(const std::string& text) {
  gw_runtime_options options = GW_RUNTIME_OPTIONS_INIT;
  options.config_text = text.c_str();
  gw_runtime* rt = nullptr;
  check(gw_runtime_create(&options, &rt), "train: the configuration");
  return RuntimePtr(rt);
}

}  // namespace gwcli::train
