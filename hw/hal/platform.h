// Platform: the backend root. Names the backend and opens the other HAL objects.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "hw/hal/bootstrap.h"
#include "hw/hal/collectives.h"
#include "hw/hal/memory_domain.h"
#include "hw/hal/stream.h"
#include "hw/hal/transport.h"
#include "memloom/error.h"

namespace memloom::hal {

// What a backend can do, for code above the HAL to ask instead of testing the backend's name (as
// UCX's memory domains advertise UCT_MD_FLAG_*). MemoryDomain::memory_is_host_accessible() is
// the memory domain's own capability.
struct Capabilities {
  // Kernels run as groups of threads in lockstep (a GPU's warps): a row copy gives each thread a
  // 16-byte chunk so that neighbouring threads touch neighbouring bytes. Without it a kernel
  // thread takes whole rows.
  bool lockstep_kernel_threads = false;
  // Its devices have peer links of their own to report (Platform::peer_access): CUDA GPUs.
  bool peer_links = false;
};

// How one device of this process reaches another one directly, as the driver reports it (CUDA
// peer access between GPUs: over NVLink or PCIe).
struct PeerAccess {
  bool accessible = false;      // the device can map and load/store the peer's memory
  int performance_rank = -1;    // the driver's relative rank of the link (0: its best); -1: none
  bool native_atomics = false;  // atomics on the peer's memory run natively over the link
};

class Platform {
 public:
  virtual ~Platform() = default;
  // "emulated" or "cuda": for messages and logs. Code decides by capabilities(), never by name.
  virtual std::string name() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual int device_count() const = 0;
  virtual size_t device_capacity(int device) const = 0;
  // The device this process works on (MEMLOOM_DEVICE / cudaSetDevice).
  virtual void set_current_device(int device) = 0;
  virtual int current_device() const = 0;
  // Makes the device the calling thread chose (cudaSetDevice) the current one, unless a variable
  // fixed the device (host/device_choice.h). Called where upstream WholeMemory reads the caller's
  // device: communicator creation and allocation. A backend whose threads choose no device keeps
  // its device.
  virtual void follow_caller_device() {}
  // The backend's own description of `device` (-1: the current one), valid until the process
  // ends: a cudaDeviceProp on CUDA. Null where the backend has none (emulated devices).
  virtual const void* native_device_properties(int device) {
    (void)device;
    return nullptr;
  }
  // How device `from` reaches device `to` (two different devices of this backend). Nullopt where
  // the backend's devices have no peer links of their own (capabilities().peer_links is false:
  // emulated devices are host memory).
  virtual std::optional<PeerAccess> peer_access(int from, int to) {
    (void)from;
    (void)to;
    return std::nullopt;
  }

  // Device scratch memory the kernel `id` needs for `work_items` items (on the current device),
  // for the kernels whose arguments carry a scratch pointer (kGroupRows: items = requests;
  // kScanCounts: items = counts).
  virtual size_t kernel_scratch_bytes(KernelId id, size_t work_items) const {
    (void)id;
    (void)work_items;
    return 0;
  }

  virtual MemoryDomain& memory_domain() = 0;
  virtual std::unique_ptr<Stream> create_stream(int device) = 0;
  // A Stream over one the caller owns and keeps alive (an API's user-supplied stream): a
  // cudaStream_t on the CUDA backend. The returned object never destroys it.
  virtual std::unique_ptr<Stream> adopt_stream(void* native_handle) {
    (void)native_handle;
    raise(Status::kNotSupported, name() + " backend: adopting a native stream is not supported");
  }
  // Collective: every member of `group` calls it with the same spec.
  virtual std::unique_ptr<Collectives> create_collectives(const GroupSpec& group,
                                                          Bootstrap& bootstrap,
                                                          Deadline deadline) = 0;
  virtual std::unique_ptr<Transport> create_transport(const TransportOptions& options) = 0;
  std::unique_ptr<Transport> create_transport() { return create_transport(TransportOptions{}); }
  // What UCX, which create_transport opens, offers here (asks UCX once per process).
  virtual TransportSupport transport_support() = 0;
};

// The entry point a backend module exports (extern "C", so dlsym finds it).
using CreatePlatformFn = Platform* (*)();
inline constexpr const char* kCreatePlatformSymbol = "memloom_create_platform";

}  // namespace memloom::hal
