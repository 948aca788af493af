// The client's end of a session's data-plane connection
// (proto/neuron/rtd/abi/data_plane.h): attach, receive shared regions, and
// tell whether the daemon is still there.
#ifndef NEURONRT_SRC_INTERNAL_DATA_PLANE_CONNECTION_H_
#define NEURONRT_SRC_INTERNAL_DATA_PLANE_CONNECTION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace neuronrt::internal {

// A region the daemon sent, mapped read-write. Unmapped on destruction.
class MappedRegion {
 public:
  MappedRegion(void* data, uint64_t size, uint32_t kind) : data_(data), size_(size), kind_(kind) {}
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  ~MappedRegion();

  char* data() const { return static_cast<char*>(data_); }
  uint64_t size() const { return size_; }
  uint32_t kind() const { return kind_; }

 private:
  void* const data_;
  const uint64_t size_;
  const uint32_t kind_;
};

struct ReceivedRegion {
  std::unique_ptr<MappedRegion> region;
  int extra_fd = -1;  // a command ring's doorbell; owned by the receiver
};

// The data-plane address OpenSession answered, as a "unix:PATH" to connect
// to: a bare file name is a socket beside `grpc_socket_path`, the socket the
// client called (a grant's directory, mounted where the daemon cannot know).
std::string ResolveDataPlaneAddress(const std::string& answered,
                                    const std::string& grpc_socket_path);

// Thread-safety: every method may be called from any thread.
class DataPlaneConnection {
 public:
  // Connects to `address` ("unix:PATH") and attaches to the session.
  static absl::StatusOr<std::unique_ptr<DataPlaneConnection>> Attach(const std::string& address,
                                                                     uint64_t session_id,
                                                                     const std::string& token);
  DataPlaneConnection(const DataPlaneConnection&) = delete;
  DataPlaneConnection& operator=(const DataPlaneConnection&) = delete;
  ~DataPlaneConnection();

  // The region with `region_id`; regions that arrive before it are kept for
  // later calls. The daemon sends a region before the RPC that creates it
  // returns, so this waits only on a slow daemon.
  absl::StatusOr<ReceivedRegion> Receive(uint64_t region_id, uint32_t kind,
                                         absl::Duration timeout = absl::Seconds(30));

  // False once the daemon has closed the connection (it ended the session,
  // or it is gone).
  bool Alive() const;

 private:
  explicit DataPlaneConnection(int fd) : fd_(fd) {}
  absl::Status ReadOne(absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const int fd_;
  absl::Mutex mutex_;
  // By (kind, region id): ids are unique per kind.
  std::map<std::pair<uint32_t, uint64_t>, ReceivedRegion> pending_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace neuronrt::internal

#endif  // NEURONRT_SRC_INTERNAL_DATA_PLANE_CONNECTION_H_
