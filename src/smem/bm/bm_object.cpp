#include "src/smem/bm/bm_object.h"

#include "memloom/error.h"
#include "src/base/hex.h"
#include "src/base/log.h"
#include "src/base/range_map.h"
#include "src/core/platform_loader.h"
#include "src/smem/job_secret.h"
#include "src/smem/rank_agreement.h"
#include "src/smem/smem_facade.h"
#include "src/store/call_deadline.h"
#include "src/store/client.h"

namespace memloom::smem {
namespace {

constexpr uint64_t kMaxHbmStride = 64ull << 30;  // per rank, as published
constexpr uint64_t kMaxDramStride = 2ull << 40;  // per rank, as published

// What a copy type expects on each side.
enum class Expect { kUser, kDevice, kHost, kAnyGva, kAuto };

struct Directions {
  Expect src;
  Expect dst;
};

Directions directions_of(smem_bm_copy_type type) {
  switch (type) {
    case SMEMB_COPY_L2G:
      return {Expect::kUser, Expect::kDevice};
    case SMEMB_COPY_G2L:
      return {Expect::kDevice, Expect::kUser};
    case SMEMB_COPY_G2H:
      return {Expect::kDevice, Expect::kUser};
    case SMEMB_COPY_H2G:
      return {Expect::kUser, Expect::kDevice};
    case SMEMB_COPY_L2GH:
      return {Expect::kUser, Expect::kHost};
    case SMEMB_COPY_GH2L:
      return {Expect::kHost, Expect::kUser};
    case SMEMB_COPY_GH2H:
      return {Expect::kHost, Expect::kUser};
    case SMEMB_COPY_H2GH:
      return {Expect::kUser, Expect::kHost};
    case SMEMB_COPY_G2G:
      return {Expect::kAnyGva, Expect::kAnyGva};
    case SMEMB_COPY_AUTO:
      return {Expect::kAuto, Expect::kAuto};
    default:
      break;
  }
  raise(Status::kInvalidInput, "copy type " + std::to_string(static_cast<int>(type)) +
                                   " is not a smem_bm_copy_type (0 .. " +
                                   std::to_string(static_cast<int>(SMEMB_COPY_AUTO)) + ")");
}

void check_size(const char* what, uint64_t local, uint64_t stride, uint64_t max,
                size_t granularity) {
  MEMLOOM_CHECK_ARG(stride <= max, std::string(what) + " slot size " + std::to_string(stride) +
                                       " exceeds the maximum of " + std::to_string(max) + " bytes");
  MEMLOOM_CHECK_ARG(local <= stride, std::string(what) + " size " + std::to_string(local) +
                                         " exceeds its slot size " + std::to_string(stride));
  if (local % granularity != 0 || stride % granularity != 0) {
    raise(Status::kInvalidInput, std::string(what) + " sizes " + std::to_string(local) + " / " +
                                     std::to_string(stride) + " are not multiples of the " +
                                     core::platform().name() + " backend's granularity (" +
                                     std::to_string(granularity) + " bytes)");
  }
}

// SMEMB_DATA_OP_ROCE / HOST_RDMA / DEVICE_RDMA ask for RDMA. Where this UCX has no RDMA transport
// the object still moves data over UCX's other transports (TCP), with a warning, where MemFabric's
// smem_bm_create fails: the request names a data path, and UCX's is the one that turns into RDMA
// on a machine with a NIC (README, MemFabric differences).
void warn_if_rdma_is_missing(hal::Platform& platform, const BmCreateArgs& args) {
  if ((args.data_ops & kRdmaBmDataOps) == 0) return;
  const hal::TransportSupport support = platform.transport_support();
  if (!support.ucx_rdma) {
    MEMLOOM_LOG(kWarn,
                "smem_bm_create(id "
                    << args.id << "): dataOpType " << args.data_ops << " asks for RDMA, but UCX "
                    << support.ucx_version << " offers no RDMA transport here ("
                    << (support.ucx_error.empty() ? "no rc, dc or ud resource" : support.ucx_error)
                    << "); copies to other nodes go through UCX's other transports");
  }
}

using base::hex;

}  // namespace

std::unique_ptr<BmObject> BmObject::create(SmemWorld& world, const BmCreateArgs& given,
                                           uint64_t instance) {
  BmCreateArgs args = given;
  if (args.hbm_stride == 0) args.hbm_stride = args.local_hbm;
  if (args.dram_stride == 0) args.dram_stride = args.local_dram;
  MEMLOOM_CHECK_ARG(args.member_size >= 1 && args.member_size <= world.size(),
                    "memberSize " + std::to_string(args.member_size) + " is out of range [1, " +
                        std::to_string(world.size()) + "] (the world size)");
  MEMLOOM_CHECK_ARG(world.rank() < args.member_size,
                    "rank " + std::to_string(world.rank()) + " is not a member of a BM object of " +
                        std::to_string(args.member_size) + " ranks");
  MEMLOOM_CHECK_ARG(args.data_ops != 0 && (args.data_ops & ~kKnownBmDataOps) == 0,
                    "dataOpType " + std::to_string(args.data_ops) +
                        " is not a set of smem_bm_data_op_type values");
  MEMLOOM_CHECK_ARG(args.local_hbm > 0 || args.local_dram > 0,
                    "the rank contributes no memory (localHBMSize and localDRAMSize are 0)");
  auto& platform = core::platform();
  auto& domain = platform.memory_domain();
  check_size("HBM", args.local_hbm, args.hbm_stride, kMaxHbmStride,
             domain.granularity(hal::MemoryKind::kDevice));
  check_size("DRAM", args.local_dram, args.dram_stride, kMaxDramStride,
             domain.granularity(hal::MemoryKind::kHost));

  const Deadline deadline = Deadline::after(args.create_timeout);
  const store::CallDeadlineScope store_calls(deadline);
  auto prefix = world.prefix().sub("bm" + std::to_string(args.id) + "." + std::to_string(instance));
  // Ranks given different ids never meet; a BM object's ranks are world ranks, so a slot per
  // world rank tells them apart.
  auto group = core::Group::create(
      world.client(), prefix, world.rank(), args.member_size, deadline,
      core::GroupTraffic::kControl,
      core::GroupIdentity{world.prefix().sub("bm-meeting"), "id", std::to_string(args.id)});
  std::unique_ptr<BmObject> object(new BmObject(args.id, group));
  object->control_timeout_ = args.control_timeout;
  agree_on_fields(*group, "smem_bm_create(id " + std::to_string(args.id) + ")",
                  {{"the HBM slot size", args.hbm_stride},
                   {"the DRAM slot size", args.dram_stride},
                   {"dataOpType", args.data_ops},
                   {"flags", args.flags}},
                  deadline);

  const size_t n = static_cast<size_t>(args.member_size);
  const int device = world.device();
  if (args.hbm_stride > 0) {
    object->device_va_ =
        core::reserve_common_range(*group, hal::MemoryKind::kDevice, n * args.hbm_stride, deadline);
    object->device_segments_ =
        core::exchange_segments(*group, hal::MemoryKind::kDevice, device, args.local_hbm, deadline);
    object->device_ = GvaLayout("device", reinterpret_cast<uintptr_t>(object->device_va_->base()),
                                args.hbm_stride, object->device_segments_.sizes);
  }
  if (args.dram_stride > 0) {
    object->host_va_ =
        core::reserve_common_range(*group, hal::MemoryKind::kHost, n * args.dram_stride, deadline);
    object->host_segments_ =
        core::exchange_segments(*group, hal::MemoryKind::kHost, -1, args.local_dram, deadline);
    object->host_ = GvaLayout("host", reinterpret_cast<uintptr_t>(object->host_va_->base()),
                              args.dram_stride, object->host_segments_.sizes);
  }
  object->membership_ = BmMembership::create(*group, deadline);

  std::vector<std::string> addresses(n);
  if (group->spans_nodes()) {
    hal::TransportOptions transport_options;
    warn_if_rdma_is_missing(platform, args);
    run_on_all_or_none(
        *group, "smem_bm_create: opening the transport",
        [&] {
          // Its endpoint serves only ranks that prove the job's secret, from the world's store.
          transport_options.job_secret = load_or_create_job_secret(*world.client());
          object->transport_ = platform.create_transport(transport_options);
        },
        deadline);
    addresses = group->allgather_strings(object->transport_->address(), deadline);
    MEMLOOM_LOG(kDebug, "smem_bm: object " << args.id << " on rank " << object->rank()
                                           << " reaches other nodes through "
                                           << object->transport_->address());
  }

  run_on_all_or_none(
      *group, "smem_bm_create: mapping the slots",
      [&] {
        for (size_t r = 0; r < n; ++r) {
          if (object->device_segments_.segments.size() > r &&
              object->device_segments_.segments[r]) {
            object->device_va_->map(r * args.hbm_stride, *object->device_segments_.segments[r]);
          }
          if (object->host_segments_.segments.size() > r && object->host_segments_.segments[r]) {
            object->host_va_->map(r * args.dram_stride, *object->host_segments_.segments[r]);
          }
        }
        object->engine_ = std::make_unique<BmCopyEngine>(platform, device, object->transport_.get(),
                                                         addresses, args.control_timeout);
      },
      deadline);
  MEMLOOM_LOG(kDebug, "smem_bm: created object " << args.id << " on rank " << object->rank()
                                                 << ": device range " << hex(object->device_.base())
                                                 << " host range " << hex(object->host_.base()));
  return object;
}

BmObject::~BmObject() {
  const store::CallDeadlineScope store_calls(Deadline::after(control_timeout_));
  engine_.reset();  // drains asynchronous copies first
  try {
    if (membership_ && membership_->joined()) {
      membership_->set_joined(false);
      expose(false);
    }
  } catch (const std::exception& error) {
    MEMLOOM_LOG(kWarn, "smem_bm: leaving while destroying failed: " << error.what());
  }
  auto& domain = core::platform().memory_domain();
  for (const auto& [address, size] : user_memory_) {
    try {
      domain.unregister_user_memory(reinterpret_cast<void*>(address));
    } catch (const std::exception& error) {
      MEMLOOM_LOG(kWarn, "smem_bm: unregistering user memory failed: " << error.what());
    }
  }
  group_->retire();  // the last member to go removes the object's keys from the store
}

void BmObject::expose(bool on) {
  if (!transport_) return;
  for (const GvaLayout* range : {&device_, &host_}) {
    if (range->empty() || range->filled(rank()) == 0) continue;
    if (on) {
      transport_->expose(range->slot(rank()), range->filled(rank()));
    } else {
      transport_->withdraw(range->slot(rank()));
    }
  }
}

// Each member marks its first join in the store and waits for every other member's mark: the
// barrier of MemFabric's join handler. Marks stay until the object's keys go, so a member that
// joins first late finds every mark and returns at once.
void BmObject::wait_for_every_first_join() {
  const Deadline deadline = Deadline::after(control_timeout_);
  auto mark = [&](int r) { return group_->prefix()("first_join/" + std::to_string(r)); };
  store::Client& store = group_->store();
  store.set(mark(rank()), "1");
  for (int r = 0; r < size(); ++r) {
    if (store.get(mark(r), deadline.remaining())) continue;
    std::string missing;
    int count = 0;
    for (int m = r; m < size(); ++m) {
      if (store.get(mark(m), std::chrono::milliseconds(0))) continue;
      if (count++ < 32) missing += (count > 1 ? ", " : "") + std::to_string(m);
    }
    raise(Status::kTimeout,
          "smem_bm_join of BM object " + std::to_string(id_) + " (" + std::to_string(size()) +
              " ranks): timed out after " + std::to_string(control_timeout_.count()) +
              " ms waiting for rank(s) " + missing + (count > 32 ? " and more" : "") + " to join");
  }
}

void* BmObject::join() {
  std::lock_guard<std::mutex> lock(state_mutex_);
  if (membership_->joined())
    raise_repeat_call("this rank has already joined BM object " + std::to_string(id_));
  expose(true);
  membership_->set_joined(true);
  if (!joined_once_) {
    try {
      wait_for_every_first_join();
    } catch (...) {
      membership_->set_joined(false);
      expose(false);
      throw;
    }
    joined_once_ = true;
  }
  if (!device_.empty() && (device_.filled(rank()) > 0 || host_.empty()))
    return device_.slot(rank());
  return host_.slot(rank());
}

void BmObject::leave() {
  std::lock_guard<std::mutex> lock(state_mutex_);
  MEMLOOM_CHECK_ARG(membership_->joined(),
                    "this rank has not joined BM object " + std::to_string(id_));
  // Same-node peers stop first (they read the word on every copy), then other nodes' requests
  // are refused by the transport.
  membership_->set_joined(false);
  expose(false);
}

CopySide BmObject::resolve_side(const void* address, size_t bytes, CopySide::Space expected,
                                const char* what) const {
  const bool on_device = expected == CopySide::Space::kDevice;
  const GvaLayout& range = on_device ? device_ : host_;
  if (range.empty()) {
    raise(Status::kInvalidInput, std::string(what) + ": BM object " + std::to_string(id_) +
                                     " has no " + (on_device ? "device" : "host") + " range (no " +
                                     (on_device ? "HBM" : "DRAM") + " was contributed)");
  }
  GvaSpan span = range.locate(address, bytes, what);
  CopySide side;
  side.address = reinterpret_cast<uintptr_t>(address);
  side.space = expected;
  side.rank = span.rank;
  side.remote = !group_->same_node(rank(), span.rank);
  return side;
}

ResolvedCopy BmObject::resolve(const CopyEntry& entry, smem_bm_copy_type type) const {
  MEMLOOM_CHECK_ARG(entry.src != nullptr && entry.dst != nullptr,
                    "a source or destination is null");
  MEMLOOM_CHECK_ARG(entry.bytes > 0, "dataSize is 0");
  const Directions directions = directions_of(type);
  auto side_of = [&](const void* address, Expect expect, const char* what) {
    if (expect == Expect::kAnyGva || expect == Expect::kAuto) {
      if (device_.contains(address))
        return resolve_side(address, entry.bytes, CopySide::Space::kDevice, what);
      if (host_.contains(address))
        return resolve_side(address, entry.bytes, CopySide::Space::kHost, what);
      if (expect == Expect::kAnyGva) {
        raise(Status::kInvalidInput, std::string(what) + " " +
                                         hex(reinterpret_cast<uintptr_t>(address)) +
                                         " is outside the GVA of BM object " + std::to_string(id_) +
                                         " (SMEMB_COPY_G2G needs global addresses on both sides)");
      }
      expect = Expect::kUser;
    }
    if (expect == Expect::kDevice)
      return resolve_side(address, entry.bytes, CopySide::Space::kDevice, what);
    if (expect == Expect::kHost)
      return resolve_side(address, entry.bytes, CopySide::Space::kHost, what);
    for (const GvaLayout* range : {&device_, &host_}) {
      if (range->overlaps(address, entry.bytes)) {
        raise(Status::kInvalidInput,
              std::string(what) + " [" + hex(reinterpret_cast<uintptr_t>(address)) + ", +" +
                  std::to_string(entry.bytes) + ") overlaps the " + range->name() +
                  " range, but this copy type expects local memory there");
      }
    }
    CopySide side;
    side.address = reinterpret_cast<uintptr_t>(address);
    return side;
  };
  ResolvedCopy copy;
  copy.src = side_of(entry.src, directions.src, "source");
  copy.dst = side_of(entry.dst, directions.dst, "destination");
  copy.bytes = entry.bytes;
  return copy;
}

void BmObject::check_joined(const CopySide& side) const {
  if (side.rank < 0 || side.remote) return;  // other nodes: their transport refuses
  if (!membership_->is_joined(side.rank)) {
    raise(Status::kNotFound, "rank " + std::to_string(side.rank) + " has not joined BM object " +
                                 std::to_string(id_) + " (or has left)");
  }
}

void BmObject::copy(const std::vector<CopyEntry>& entries, smem_bm_copy_type type, bool async) {
  if (!membership_->joined()) {
    raise(Status::kInvalidInput, "this rank has not joined BM object " + std::to_string(id_) +
                                     " (call smem_bm_join before copying)");
  }
  std::vector<ResolvedCopy> resolved;
  resolved.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    try {
      resolved.push_back(resolve(entries[i], type));
      check_joined(resolved.back().src);
      check_joined(resolved.back().dst);
    } catch (const Error& error) {
      if (entries.size() == 1) throw;
      raise(error.status(), "batch entry " + std::to_string(i) + ": " + error.what());
    }
  }
  engine_->run(resolved, async);
}

uint64_t BmObject::local_size(smem_bm_mem_type type) const {
  switch (type) {
    case SMEM_MEM_TYPE_LOCAL_DEVICE:
    case SMEM_MEM_TYPE_DEVICE:
      return device_.empty() ? 0 : device_.filled(rank());
    case SMEM_MEM_TYPE_LOCAL_HOST:
    case SMEM_MEM_TYPE_HOST:
      return host_.empty() ? 0 : host_.filled(rank());
    default:
      break;
  }
  raise(Status::kInvalidInput,
        "memType " + std::to_string(static_cast<int>(type)) + " is not a smem_bm_mem_type");
}

void* BmObject::slot(smem_bm_mem_type type, int peer) const {
  switch (type) {
    case SMEM_MEM_TYPE_DEVICE:
      return device_.slot(peer);
    case SMEM_MEM_TYPE_HOST:
      return host_.slot(peer);
    case SMEM_MEM_TYPE_LOCAL_DEVICE:
    case SMEM_MEM_TYPE_LOCAL_HOST:
      MEMLOOM_CHECK_ARG(peer == rank(),
                        "SMEM_MEM_TYPE_LOCAL_* names this rank's own memory: pass rank " +
                            std::to_string(rank()) + ", not " + std::to_string(peer));
      return type == SMEM_MEM_TYPE_LOCAL_DEVICE ? device_.slot(peer) : host_.slot(peer);
    default:
      break;
  }
  raise(Status::kInvalidInput,
        "memType " + std::to_string(static_cast<int>(type)) + " is not a smem_bm_mem_type");
}

int BmObject::rank_of(const void* gva) const {
  int rank = device_.rank_of(gva);
  return rank >= 0 ? rank : host_.rank_of(gva);
}

void BmObject::register_user_memory(void* address, size_t size) {
  const auto start = reinterpret_cast<uintptr_t>(address);
  MEMLOOM_CHECK_ARG(address != nullptr, "addr is 0");
  MEMLOOM_CHECK_ARG(size > 0, "size is 0");
  MEMLOOM_CHECK_ARG(start % SMEM_BM_USER_MEM_ALIGNMENT == 0,
                    "addr " + hex(start) + " is not aligned to " +
                        std::to_string(SMEM_BM_USER_MEM_ALIGNMENT) + " bytes");
  MEMLOOM_CHECK_ARG(start + size > start, "addr + size overflows");
  for (const GvaLayout* range : {&device_, &host_}) {
    MEMLOOM_CHECK_ARG(!range->overlaps(address, size),
                      "[" + hex(start) + ", +" + std::to_string(size) + ") overlaps the " +
                          range->name() +
                          " range of the GVA; only memory outside it can be registered");
  }
  std::lock_guard<std::mutex> lock(state_mutex_);
  const bool overlap = base::first_overlap(user_memory_, start, size) != user_memory_.end();
  MEMLOOM_CHECK_ARG(!overlap, "[" + hex(start) + ", +" + std::to_string(size) +
                                  ") overlaps memory registered before");
  core::platform().memory_domain().register_user_memory(address, size);
  user_memory_.emplace(start, size);
}

void BmObject::unregister_user_memory(void* address) {
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto found = user_memory_.find(reinterpret_cast<uintptr_t>(address));
  if (found == user_memory_.end()) {
    raise(Status::kNotFound,
          "no user memory was registered at " + hex(reinterpret_cast<uintptr_t>(address)));
  }
  core::platform().memory_domain().unregister_user_memory(address);
  user_memory_.erase(found);
}

}  // namespace memloom::smem
