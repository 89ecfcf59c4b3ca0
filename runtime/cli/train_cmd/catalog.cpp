// The configurations `gradwire train` compares.
#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {

// onebit-ef's lr_scale: one-bit gradients with SGD momentum 0.9 diverge at the default 0.05 (measured:
// test accuracy 0.32 after 5 epochs, the loss above ln 10 from the first quarter epoch); at 0.2 x (0.01)
// they train to about 0.87.
const std::vector<Configuration>& configurations() {
  static const std::vector<Configuration> all = {
      {"none", "uncompressed fp32 gradients, averaged every step",
       "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
      {"fp16", "gradients as fp16",
       "[codec]\nname = \"fp16\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
      {"int8", "gradients as int8 with one scale per block of 256",
       "[codec]\nname = \"int8\"\nerror_feedback = false\n[schedule]\nname = \"every_step\"\n"},
      {"topk-ef", "top-k 1 % of the gradient with error feedback",
       "[codec]\nname = \"topk\"\nerror_feedback = true\n[codec.topk]\nratio = 0.01\n[schedule]\nname = \"every_step\"\n"},
      {"onebit-ef", "one bit per gradient (sign, scale per block) with error feedback, at 0.2 x --lr",
       "[codec]\nname = \"onebit\"\nerror_feedback = true\n[schedule]\nname = \"every_step\"\n", 0.2f},
      {"local-sgd", "local SGD: uncompressed parameters averaged every 8 steps, none in between",
       "[codec]\nname = \"none\"\nerror_feedback = false\n[schedule]\nname = \"local_sgd\"\n"
       "[schedule.local_sgd]\nperiod = 8\n"},
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

}  // namespace gwcli::train
