// A sum whose terms fade exponentially with their age: "how much over about
// the last `window`", kept in constant space.
#ifndef NEURON_RTD_DAEMON_COMMON_DECAYING_SUM_H_
#define NEURON_RTD_DAEMON_COMMON_DECAYING_SUM_H_

#include <cmath>
#include <cstdint>

namespace neuron::rtd {

// Thread-safety: none; callers lock.
class DecayingSum {
 public:
  explicit DecayingSum(double window_ns) : window_ns_(window_ns) {}

  // Adds `amount` at time `now_ns` (times never go back; an earlier time is
  // taken as the latest seen).
  void Add(int64_t now_ns, double amount) {
    DecayTo(now_ns);
    sum_ += amount;
  }

  // The sum as of `now_ns`. Divided by the window it is a rate: a steady
  // `r` per nanosecond converges to r * window.
  double ValueAt(int64_t now_ns) const {
    if (now_ns <= last_ns_) return sum_;
    return sum_ * std::exp(-static_cast<double>(now_ns - last_ns_) / window_ns_);
  }

  double window_ns() const { return window_ns_; }

 private:
  void DecayTo(int64_t now_ns) {
    if (now_ns <= last_ns_) return;
    sum_ = ValueAt(now_ns);
    last_ns_ = now_ns;
  }

  const double window_ns_;
  double sum_ = 0;
  int64_t last_ns_ = 0;
};

}  // namespace neuron::rtd

#endif  // NEURON_RTD_DAEMON_COMMON_DECAYING_SUM_H_
