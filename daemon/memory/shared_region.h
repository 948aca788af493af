// Shared memory that the daemon creates for a session and passes to its
// client: a memfd sealed against resizing (so the client cannot make the
// daemon fault by shrinking it), mapped read-write in the daemon.
#ifndef NEURON_RTD_DAEMON_MEMORY_SHARED_REGION_H_
#define NEURON_RTD_DAEMON_MEMORY_SHARED_REGION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace neuron::rtd::memory {

// Lifetime: the mapping and the descriptor live as long as the object; the
// client's copy of the descriptor is independent.
// Thread-safety: immutable after creation; the memory itself is shared with
// an untrusted client and must only be read with that in mind.
class SharedRegion {
 public:
  // `name` shows in /proc/PID/maps. RESOURCE_EXHAUSTED when the memory
  // cannot be had.
  static absl::StatusOr<std::unique_ptr<SharedRegion>> Create(uint64_t id, uint32_t kind,
                                                              uint64_t size,
                                                              const std::string& name);
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  uint64_t id() const { return id_; }
  uint32_t kind() const { return kind_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  char* data() const { return static_cast<char*>(data_); }

  // data() + offset when [offset, offset + length) lies inside the region,
  // else nullptr.
  char* Slice(uint64_t offset, uint64_t length) const;

 private:
  SharedRegion(uint64_t id, uint32_t kind, uint64_t size, int fd, void* data)
      : id_(id), kind_(kind), size_(size), fd_(fd), data_(data) {}

  const uint64_t id_;
  const uint32_t kind_;
  const uint64_t size_;
  const int fd_;
  void* const data_;
};

}  // namespace neuron::rtd::memory

#endif  // NEURON_RTD_DAEMON_MEMORY_SHARED_REGION_H_
