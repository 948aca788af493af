// The state of the fake libnrt: the instance's cores and their HBM budgets,
// which of them this process owns, the injected faults. One per process, as
// the real runtime's.
//
// Environment (read at nrt_init unless noted):
//   FAKE_NRT_CORES         logical cores of the instance (default 4; read at
//                          first use, as the real count works before init)
//   FAKE_NRT_HBM_BYTES     HBM of each core (default 1 GiB)
//   FAKE_NRT_DIR           where cores are locked, one flock'ed file each, so
//                          that two processes cannot own one core (default
//                          /tmp/fake-nrt-UID)
//   FAKE_NRT_FAIL          faults: SYMBOL:STATUS[:NTH][,...], the NTH call of
//                          SYMBOL (every call without NTH) returns STATUS;
//                          nrt_execute:101 also leaves its core unrecoverable
//   FAKE_NRT_EXEC_DELAY_US added to every nrt_execute
//   FAKE_NRT_VERSION       what nrt_get_version reports (default 2.34.10)
//   NEURON_RT_VISIBLE_CORES, NEURON_RT_NUM_CORES as the real runtime's
#ifndef NEURON_RTD_TESTS_FAKE_NRT_FAKE_RUNTIME_H_
#define NEURON_RTD_TESTS_FAKE_NRT_FAKE_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/hal/nrt/nrt_api.h"
#include "tests/fake_nrt/fake_model.h"

// The opaque types of the API, defined by the fake.
struct nrt_tensor {
  struct Storage {
    std::vector<unsigned char> bytes;
    int core = -1;  // absolute; -1 on the host
    ~Storage();
  };
  std::shared_ptr<Storage> storage;
  size_t offset = 0;
  size_t size = 0;
  std::string name;
};

struct nrt_model {
  int core = 0;  // absolute
  neuron::rtd::fake_nrt::FakeModel spec;
  // HBM the loaded model takes on its core (a real load places the program,
  // its constants and a scratchpad there): the NEFF's size here.
  uint64_t hbm_bytes = 0;
};

namespace neuron::rtd::fake_nrt {

struct TensorSet {
  std::map<std::string, nrt_tensor_t*> tensors;
};

class FakeRuntime {
 public:
  static FakeRuntime& Get();

  std::mutex mutex;

  uint32_t total_cores();
  NRT_STATUS Init();
  void Close();
  // NRT_UNINITIALIZED or NRT_CLOSED unless the runtime is up.
  NRT_STATUS CheckUp() const;
  // The absolute core of a relative one; -1 when out of range.
  int Absolute(int relative) const;
  uint32_t visible_cores() const { return static_cast<uint32_t>(visible_.size()); }

  // Accounts `bytes` of HBM on absolute core `core`; false past its budget.
  bool Charge(int core, uint64_t bytes);
  void Refund(int core, uint64_t bytes);
  uint64_t used(int core) const;
  uint64_t hbm_per_core() const { return hbm_per_core_; }

  // The injected status of this call of `symbol`, or NRT_SUCCESS.
  NRT_STATUS Fault(const std::string& symbol);
  bool unrecoverable(int core) const { return unrecoverable_.count(core) != 0; }
  void MarkUnrecoverable(int core) { unrecoverable_.insert(core); }

  uint64_t exec_delay_us() const { return exec_delay_us_; }
  std::string version() const;

 private:
  struct InjectedFault {
    std::string symbol;
    NRT_STATUS status;
    uint64_t nth = 0;  // 0: every call
  };

  void ReadFaults();

  bool initialized_ = false;
  bool closed_ = false;
  uint32_t total_ = 0;
  uint64_t hbm_per_core_ = 1ull << 30;
  uint64_t exec_delay_us_ = 0;
  std::vector<int> visible_;
  std::vector<int> lock_fds_;
  std::map<int, uint64_t> used_;
  std::vector<InjectedFault> faults_;
  bool faults_read_ = false;
  std::map<std::string, uint64_t> calls_;
  std::set<int> unrecoverable_;
};

}  // namespace neuron::rtd::fake_nrt

#endif  // NEURON_RTD_TESTS_FAKE_NRT_FAKE_RUNTIME_H_
