// `gradwire train`'s options turned into the trainer's, and the data set loaded, each with a clear error.
#include <sstream>

#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {
namespace {

std::vector<uint32_t> parse_hidden(const std::string& s) {
  std::vector<uint32_t> sizes;
  for (const auto& p : split_list(s)) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != p.size() || v == 0 || v > 65536)
      throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --hidden takes layer sizes 1..65536 separated by commas, "
                                             "e.g. 256,128; '" + p + "' is not one");
    sizes.push_back(uint32_t(v));
  }
  if (sizes.empty()) throw Failure(GW_ERR_INVALID_ARGUMENT, "train: --hidden needs at least one layer size, e.g. 256,128");
  return sizes;
}

}  // namespace

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) parts.push_back(p);
  return parts;
}

gwtrain::TrainOptions train_options(const Options& o) {
  gwtrain::TrainOptions t;
  t.hidden = parse_hidden(o.hidden);
  t.epochs = o.epochs;
  t.batch = o.batch;
  t.lr = o.lr;
  t.momentum = o.momentum;
  t.seed = o.seed;
  t.evals_per_epoch = o.evals_per_epoch;
  t.train_limit = o.train_images;
  t.test_limit = o.test_images;
  return t;
}

gwtrain::Dataset load_data(const std::string& dir) {
  try {
    return gwtrain::load_fashion_mnist(dir);
  } catch (const gwtrain::DataError& e) {
    throw Failure(GW_ERR_NOT_FOUND, std::string("train: ") + e.what());
  }
}

}  // namespace gwcli::train
