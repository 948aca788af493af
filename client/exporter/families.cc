#include "client/exporter/families.h"

namespace neuron_exporter {

prometheus::ClientMetric& Families::Add(std::string_view name, std::string_view help,
                                        prometheus::MetricType type, const Labels& labels) {
  auto found = index_.find(name);
  if (found == index_.end()) {
    found = index_.emplace(std::string(name), families_.size()).first;
    families_.push_back(
        prometheus::MetricFamily{.name = std::string(name), .help = std::string(help), .type = type});
  }
  prometheus::ClientMetric& metric = families_[found->second].metric.emplace_back();
  for (const auto& [label, value] : labels) metric.label.push_back({label, value});
  for (const auto& [label, value] : constant_labels_) metric.label.push_back({label, value});
  return metric;
}

void Families::Gauge(std::string_view name, std::string_view help, const Labels& labels,
                     double value) {
  Add(name, help, prometheus::MetricType::Gauge, labels).gauge.value = value;
}

void Families::Counter(std::string_view name, std::string_view help, const Labels& labels,
                       double value) {
  Add(name, help, prometheus::MetricType::Counter, labels).counter.value = value;
}

void Families::Histogram(std::string_view name, std::string_view help, const Labels& labels,
                         const HistogramSample& sample) {
  prometheus::ClientMetric::Histogram& histogram =
      Add(name, help, prometheus::MetricType::Histogram, labels).histogram;
  histogram.sample_count = sample.count;
  histogram.sample_sum = sample.sum;
  for (const auto& [upper_bound, cumulative] : sample.buckets) {
    histogram.bucket.push_back({.cumulative_count = cumulative, .upper_bound = upper_bound});
  }
}

}  // namespace neuron_exporter
