// Metric families under construction: samples are added by name, the
// family made on first use, in the order first used; every sample carries
// the exporter's constant labels after its own.
#ifndef NEURON_RTD_EXPORTER_FAMILIES_H_
#define NEURON_RTD_EXPORTER_FAMILIES_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "prometheus/metric_family.h"

namespace neuron_exporter {

using Labels = std::vector<std::pair<std::string, std::string>>;

// A histogram's buckets: upper bound (seconds, ascending, +Inf last) and the
// cumulative count of observations at or under it.
struct HistogramSample {
  std::vector<std::pair<double, uint64_t>> buckets;
  uint64_t count = 0;
  double sum = 0;
};

// Thread-safety: none; one per scrape.
class Families {
 public:
  explicit Families(Labels constant_labels = {}) : constant_labels_(std::move(constant_labels)) {}

  void Gauge(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Counter(std::string_view name, std::string_view help, const Labels& labels, double value);
  void Histogram(std::string_view name, std::string_view help, const Labels& labels,
                 const HistogramSample& sample);

  std::vector<prometheus::MetricFamily> Take() && { return std::move(families_); }

 private:
  prometheus::ClientMetric& Add(std::string_view name, std::string_view help,
                                prometheus::MetricType type, const Labels& labels);

  const Labels constant_labels_;
  std::vector<prometheus::MetricFamily> families_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace neuron_exporter

#endif  // NEURON_RTD_EXPORTER_FAMILIES_H_
