// The picture of `gradwire train` (OUT/train.svg): test accuracy against bytes sent and against time,
// one line per configuration, the data set README's reference as a line.
#include "train/plot.hpp"
#include "train_cmd/train_cmd.hpp"

namespace gwcli::train {

std::string picture(const std::vector<Row>& rows) {
  std::vector<gwtrain::Series> series;
  for (const auto& r : rows) {
    gwtrain::Series s{r.name, {}, {}, {}};
    for (const auto& p : r.result.at("curve")) {
      s.bytes.push_back(p.at("bytes").get<double>());
      s.seconds.push_back(p.at("seconds").get<double>());
      s.accuracy.push_back(p.at("test_accuracy").get<double>());
    }
    series.push_back(std::move(s));
  }
  return gwtrain::accuracy_svg(series, kReferenceAccuracy, kReferenceLabel);
}

}  // namespace gwcli::train
