#include "daemon/hal/sim/launch_host_budget.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

namespace neuron::rtd::hal::sim {
namespace internal {

struct HostBudget {
  explicit HostBudget(uint64_t limit) : limit_bytes(limit) {}
  const uint64_t limit_bytes;
  // Atomic: a tensor made in the launch may be freed on another thread.
  std::atomic<uint64_t> live_bytes{0};
  std::atomic<uint64_t> peak_bytes{0};
};

}  // namespace internal
namespace {

thread_local std::shared_ptr<internal::HostBudget> current_budget;

// Every allocation starts with this header, kHeaderBytes before the data,
// so that the allocator's data pointers stay simple (data == context), as
// raw_allocate and oneDNN require, and a free needs no lookup. `budget` is
// set while a scope counted the allocation; freeing it gives the bytes back
// whenever that happens (the budget lives as long as its allocations).
struct AllocationHeader {
  std::shared_ptr<internal::HostBudget> budget;
  uint64_t bytes = 0;
};
// Keeps the data at the inner allocator's alignment.
constexpr size_t kHeaderBytes = 64;
static_assert(sizeof(AllocationHeader) <= kHeaderBytes);

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner)
      : inner_(inner), inner_deleter_(inner->raw_deleter()) {}

  static void Delete(void* data);

  c10::DataPtr allocate(size_t bytes) override {
    const std::shared_ptr<internal::HostBudget>& budget = current_budget;
    if (budget != nullptr) Charge(*budget, bytes);
    char* base;
    try {
      base = static_cast<char*>(inner_->raw_allocate(bytes + kHeaderBytes));
    } catch (...) {
      if (budget != nullptr) budget->live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
    new (base) AllocationHeader{.budget = budget, .bytes = bytes};
    void* data = base + kHeaderBytes;
    return c10::DataPtr(data, data, &CountingCpuAllocator::Delete, c10::Device(c10::kCPU));
  }

  c10::DeleterFnPtr raw_deleter() const override { return &CountingCpuAllocator::Delete; }

  void copy_data(void* destination, const void* source, std::size_t count) const override {
    default_copy_data(destination, source, count);
  }

  c10::DeleterFnPtr inner_deleter() const { return inner_deleter_; }

 private:
  static void Charge(internal::HostBudget& budget, size_t bytes) {
    const uint64_t live = budget.live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    if (live > budget.limit_bytes) {
      budget.live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "the kernel asked for ", bytes,
                       " bytes of host memory with ", live - bytes,
                       " in use; the simulator bounds one launch to ", budget.limit_bytes,
                       " bytes ([sim] max_launch_host_bytes)");
    }
    uint64_t peak = budget.peak_bytes.load(std::memory_order_relaxed);
    while (live > peak &&
           !budget.peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
  }

  c10::Allocator* const inner_;
  const c10::DeleterFnPtr inner_deleter_;
};

CountingCpuAllocator* installed_allocator = nullptr;

void CountingCpuAllocator::Delete(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeaderBytes;
  auto* header = reinterpret_cast<AllocationHeader*>(base);
  if (header->budget != nullptr) {
    header->budget->live_bytes.fetch_sub(header->bytes, std::memory_order_relaxed);
  }
  header->~AllocationHeader();
  installed_allocator->inner_deleter()(base);
}

void InstallOnce() {
  static const bool installed = [] {
    c10::Allocator* inner = c10::GetCPUAllocator();
    // Without a raw deleter the inner allocator cannot be wrapped this way;
    // ATen's default CPU allocator has one.
    TORCH_INTERNAL_ASSERT(inner->raw_deleter() != nullptr,
                          "the CPU allocator has no raw deleter");
    // Leaked: ATen may free tensors with it until the process ends.
    installed_allocator = new CountingCpuAllocator(inner);
    c10::SetCPUAllocator(installed_allocator, /*priority=*/UINT8_MAX);
    return true;
  }();
  (void)installed;
}

}  // namespace

LaunchHostBudget::LaunchHostBudget(uint64_t limit_bytes)
    : budget_(std::make_shared<internal::HostBudget>(limit_bytes)) {
  InstallOnce();
  current_budget = budget_;
}

LaunchHostBudget::~LaunchHostBudget() { current_budget.reset(); }

uint64_t LaunchHostBudget::peak_bytes() const {
  return budget_->peak_bytes.load(std::memory_order_relaxed);
}

}  // namespace neuron::rtd::hal::sim
