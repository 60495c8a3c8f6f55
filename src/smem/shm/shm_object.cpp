#include "src/smem/shm/shm_object.h"

#include <cstring>
#include <optional>
#include <vector>

#include "memloom/error.h"
#include "smem/host/smem_shm_def.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"
#include "src/smem/rank_agreement.h"
#include "src/smem/smem_facade.h"
#include "src/store/call_deadline.h"

namespace memloom::smem {
namespace {

// How a rank reaches the slots of the ranks on its node (all it maps). SMEMS_DATA_OP_RDMA is
// accepted at creation but reaches nothing more: memloom's SHM has no data path across nodes (a
// kernel's loads and stores, and SDMA copies, touch mapped slots only), so ranks on other nodes
// stay unreachable (smem_shm_topology_can_reach: 0) with or without it.
constexpr uint32_t kSupportedDataOps = SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA;
constexpr uint32_t kKnownDataOps = SMEMS_DATA_OP_MTE | SMEMS_DATA_OP_SDMA | SMEMS_DATA_OP_RDMA;
constexpr size_t kContextStride = SMEM_SHM_EXTRA_CONTEXT_STRIDE;
constexpr size_t kContextSizeOffset =
    SMEM_SHM_EXTRA_CONTEXT_SIZE_MAX;  // where the uint32 size lives

void validate(const ShmCreateArgs& args) {
  MEMLOOM_CHECK_ARG(args.id <= SMEM_SHM_ID_MAX, "id " + std::to_string(args.id) +
                                                    " is out of range [0, " +
                                                    std::to_string(SMEM_SHM_ID_MAX) + "]");
  MEMLOOM_CHECK_ARG(args.rank_size >= 1 && args.rank_size <= SMEM_SHM_RANK_SIZE_MAX,
                    "rankSize " + std::to_string(args.rank_size) + " is out of range [1, " +
                        std::to_string(SMEM_SHM_RANK_SIZE_MAX) + "]");
  MEMLOOM_CHECK_ARG(args.rank >= 0 && args.rank < args.rank_size,
                    "rankId " + std::to_string(args.rank) + " is out of range [0, " +
                        std::to_string(args.rank_size) + ")");
  MEMLOOM_CHECK_ARG(args.symmetric_size > 0 && args.symmetric_size <= SMEM_SHM_SYMMETRIC_SIZE_MAX,
                    "symmetricSize " + std::to_string(args.symmetric_size) +
                        " is out of range [1, " + std::to_string(SMEM_SHM_SYMMETRIC_SIZE_MAX) +
                        "]");
  MEMLOOM_CHECK_ARG(args.data_ops != 0 && (args.data_ops & ~kKnownDataOps) == 0,
                    "dataOpType " + std::to_string(args.data_ops) +
                        " is not a set of smem_shm_data_op_type values");
  const size_t granularity = core::platform().memory_domain().granularity(hal::MemoryKind::kDevice);
  if (args.symmetric_size % granularity != 0) {
    raise(Status::kInvalidInput, "symmetricSize " + std::to_string(args.symmetric_size) +
                                     " is not a multiple of the " + core::platform().name() +
                                     " backend's granularity (" + std::to_string(granularity) +
                                     " bytes)");
  }
  if (kContextStride % granularity != 0) {
    raise(Status::kNotSupported, "the backend's granularity (" + std::to_string(granularity) +
                                     " bytes) does not divide SMEM_SHM_EXTRA_CONTEXT_STRIDE");
  }
}

// Up to this many bytes per rank, smem_shm allgathers carry their argument checks and their data
// in one collective; beyond it, the extra staging copy would cost more than a second collective.
constexpr uint32_t kFusedAllgatherBytes = 64u * 1024u;

// What every rank of an allgather tells the others about its arguments.
struct ArgumentCheck {
  uint64_t send_size;
  uint64_t receive_fits;  // 1 when recvSize >= sendSize * rankSize
};

// Throws the same error on every rank when any rank's arguments are wrong; `gathered` holds every
// rank's ArgumentCheck, `stride` bytes apart.
void check_arguments(const core::Group& group, const ArgumentCheck& mine, uint32_t recv_size,
                     const void* gathered, size_t stride) {
  if (mine.receive_fits == 0) {
    raise(Status::kInvalidInput,
          "recvSize " + std::to_string(recv_size) + " is smaller than sendSize * rankSize = " +
              std::to_string(mine.send_size * static_cast<uint64_t>(group.size())));
  }
  for (int r = 0; r < group.size(); ++r) {
    ArgumentCheck theirs{};
    std::memcpy(&theirs, static_cast<const std::byte*>(gathered) + static_cast<size_t>(r) * stride,
                sizeof(theirs));
    if (theirs.send_size != mine.send_size) {
      raise(Status::kInvalidInput,
            "ranks disagree on sendSize: this rank (" + std::to_string(group.rank()) + ") passed " +
                std::to_string(mine.send_size) + ", rank " + std::to_string(r) + " passed " +
                std::to_string(theirs.send_size));
    }
    if (theirs.receive_fits == 0) {
      raise(Status::kInvalidInput, "rank " + std::to_string(r) + "'s recvSize is too small for " +
                                       std::to_string(group.size()) + " x " +
                                       std::to_string(mine.send_size) + " bytes");
    }
  }
}

}  // namespace

ShmObject::ShmObject(uint32_t id, std::shared_ptr<core::Group> group,
                     std::shared_ptr<store::Client> client,
                     std::chrono::milliseconds control_timeout)
    : id_(id),
      group_(std::move(group)),
      client_(std::move(client)),
      control_timeout_(control_timeout) {}

ShmObject::~ShmObject() {
  const store::CallDeadlineScope store_calls(control_deadline());
  group_->retire();  // the last member to go removes the object's keys from the store
}

std::unique_ptr<ShmObject> ShmObject::create(SmemWorld& world, const ShmCreateArgs& args,
                                             uint64_t instance) {
  validate(args);
  const Deadline deadline = Deadline::after(args.create_timeout);
  const store::CallDeadlineScope store_calls(deadline);
  auto prefix =
      world.prefix().sub("shm" + std::to_string(args.id) + "." + std::to_string(instance));
  // Ranks given different ids never meet. When the object spans the world, each world rank is
  // one of its ranks, so a slot per rankId in the world tells those ranks apart; a smaller object
  // may legitimately share its rankIds with another object of the world created meanwhile.
  std::optional<core::GroupIdentity> identity;
  if (args.rank_size == world.size()) {
    identity =
        core::GroupIdentity{world.prefix().sub("shm-meeting"), "id", std::to_string(args.id)};
  }
  auto group = core::Group::create(world.client(), prefix, args.rank, args.rank_size, deadline,
                                   core::GroupTraffic::kControl, identity);
  std::unique_ptr<ShmObject> object(
      new ShmObject(args.id, group, world.client(), args.control_timeout));
  agree_on_fields(*group, "smem_shm_create(id " + std::to_string(args.id) + ")",
                  {{"symmetricSize", args.symmetric_size},
                   {"dataOpType", args.data_ops},
                   {"flags", args.flags}},
                  deadline);
  if ((args.data_ops & SMEMS_DATA_OP_RDMA) != 0 && group->spans_nodes() && group->rank() == 0) {
    MEMLOOM_LOG(kWarn, "smem_shm_create(id " << args.id
                                             << "): SMEMS_DATA_OP_RDMA is accepted, but memloom's "
                                                "SHM maps the slots of same-node ranks only; ranks "
                                                "on other nodes stay unreachable");
  }

  const size_t n = static_cast<size_t>(args.rank_size);
  const size_t contexts_bytes = n * kContextStride;
  object->range_ = core::reserve_common_range(*group, hal::MemoryKind::kDevice,
                                              contexts_bytes + n * args.symmetric_size, deadline);
  const int device = world.device();
  object->data_ = core::exchange_segments(*group, hal::MemoryKind::kDevice, device,
                                          args.symmetric_size, deadline);
  object->contexts_ =
      core::exchange_segments(*group, hal::MemoryKind::kDevice, device, kContextStride, deadline);

  const auto base = reinterpret_cast<uintptr_t>(object->range_->base());
  std::vector<size_t> filled(n, 0), context_filled(n, 0);
  for (size_t r = 0; r < n; ++r) {
    if (object->data_.segments[r]) filled[r] = args.symmetric_size;
    if (object->contexts_.segments[r]) context_filled[r] = kContextStride;
  }
  object->context_blocks_ = GvaLayout("extra context", base, kContextStride, context_filled);
  object->slots_ = GvaLayout("symmetric", base + contexts_bytes, args.symmetric_size, filled);

  run_on_all_or_none(
      *group, "smem_shm_create: mapping the slots",
      [&] {
        for (size_t r = 0; r < n; ++r) {
          if (object->contexts_.segments[r]) {
            object->range_->map(r * kContextStride, *object->contexts_.segments[r]);
          }
          if (object->data_.segments[r]) {
            object->range_->map(contexts_bytes + r * args.symmetric_size,
                                *object->data_.segments[r]);
          }
        }
        object->stream_ = core::platform().create_stream(device);
        // Device memory need not start zeroed: "no context yet" must be written.
        const uint32_t zero = 0;
        object->stream_->copy(
            static_cast<char*>(object->context_block(args.rank)) + kContextSizeOffset, &zero,
            sizeof(zero));
        object->stream_->synchronize(deadline);
      },
      deadline);
  object->exit_ = std::make_unique<ShmGlobalExit>(object->client_, prefix("global_exit"));
  return object;
}

void* ShmObject::context_block(int rank) const {
  MEMLOOM_CHECK_ARG(
      rank >= 0 && rank < size(),
      "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(size()) + ")");
  if (context_blocks_.filled(rank) == 0) return nullptr;
  return context_blocks_.slot(rank);
}

// The facade checked context and size (before the handle, in MemFabric's order).
void ShmObject::set_extra_context(const void* context, uint32_t size) {
  auto* block = static_cast<char*>(context_block(rank()));
  stream_->copy(block, context, size);
  stream_->copy(block + kContextSizeOffset, &size, sizeof(size));
  stream_->synchronize(control_deadline());
}

void* ShmObject::extra_context_address(int rank) const {
  return context_block(rank);
}

uint32_t ShmObject::extra_context_size(int rank) {
  auto* block = static_cast<char*>(context_block(rank));
  if (block == nullptr) {
    raise(Status::kNotSupported, "rank " + std::to_string(rank) +
                                     " is on another node; its extra context is not mapped here");
  }
  uint32_t size = 0;
  stream_->copy(&size, block + kContextSizeOffset, sizeof(size));
  stream_->synchronize(control_deadline());
  return size;
}

void ShmObject::barrier() {
  std::lock_guard<std::mutex> lock(collective_mutex_);
  group_->collectives().barrier(control_deadline());
}

void ShmObject::allgather_on(core::Group& group, const void* send, uint32_t send_size, void* recv,
                             uint32_t recv_size, Deadline deadline) {
  MEMLOOM_CHECK_ARG(send != nullptr && recv != nullptr, "sendBuf or recvBuf is null");
  MEMLOOM_CHECK_ARG(send_size > 0, "sendSize must be positive");
  // Every rank must learn every send size and whether every receive buffer is large enough, so a
  // bad argument on one rank fails all ranks at once instead of hanging them.
  const uint64_t needed = uint64_t(send_size) * static_cast<uint64_t>(group.size());
  const ArgumentCheck mine{send_size, recv_size >= needed ? 1u : 0u};
  const size_t ranks = static_cast<size_t>(group.size());
  if (send_size > kFusedAllgatherBytes) {
    // Large payloads: a small exchange of the checks first, then the data straight into recv.
    std::vector<ArgumentCheck> all(ranks);
    group.collectives().allgather(&mine, all.data(), sizeof(mine), deadline);
    check_arguments(group, mine, recv_size, all.data(), sizeof(ArgumentCheck));
    group.collectives().allgather(send, recv, send_size, deadline);
    return;
  }
  // Small payloads (the latency-bound case): the checks travel in front of the data, so one
  // collective does the work of two. Ranks passing different sizes give blocks of different
  // sizes, which the collective itself refuses on every rank.
  const size_t block = sizeof(ArgumentCheck) + send_size;
  std::vector<std::byte> out(block), all(block * ranks);
  std::memcpy(out.data(), &mine, sizeof(mine));
  std::memcpy(out.data() + sizeof(mine), send, send_size);
  try {
    group.collectives().allgather(out.data(), all.data(), block, deadline);
  } catch (const Error& error) {
    if (error.status() != Status::kInvalidInput) throw;
    raise(Status::kInvalidInput, "ranks disagree on sendSize or are out of step (this rank (" +
                                     std::to_string(group.rank()) + ") passed sendSize " +
                                     std::to_string(send_size) + "; each rank's block carries " +
                                     std::to_string(sizeof(ArgumentCheck)) +
                                     " more bytes of argument checks): " + error.what());
  }
  check_arguments(group, mine, recv_size, all.data(), block);
  for (size_t r = 0; r < ranks; ++r) {
    std::memcpy(static_cast<std::byte*>(recv) + r * send_size,
                all.data() + r * block + sizeof(ArgumentCheck), send_size);
  }
}

void ShmObject::allgather(const void* send, uint32_t send_size, void* recv, uint32_t recv_size) {
  std::lock_guard<std::mutex> lock(collective_mutex_);
  allgather_on(*group_, send, send_size, recv, recv_size, control_deadline());
}

core::Group& ShmObject::subgroup(const std::string& key, int size, int rank) {
  MEMLOOM_CHECK_ARG(!key.empty() && key.size() <= 256, "sub-group key must be 1..256 characters");
  MEMLOOM_CHECK_ARG(size >= 1 && size <= this->size(), "sub-group size " + std::to_string(size) +
                                                           " is out of range [1, " +
                                                           std::to_string(this->size()) + "]");
  MEMLOOM_CHECK_ARG(rank >= 0 && rank < size, "sub-group rank " + std::to_string(rank) +
                                                  " is out of range [0, " + std::to_string(size) +
                                                  ")");
  auto found = subgroups_.find(key);
  if (found != subgroups_.end()) {
    if (found->second->size() != size || found->second->rank() != rank) {
      raise(Status::kInvalidInput, "sub-group '" + key + "' was first used with rank " +
                                       std::to_string(found->second->rank()) + " of " +
                                       std::to_string(found->second->size()) + ", now with rank " +
                                       std::to_string(rank) + " of " + std::to_string(size));
    }
    return *found->second;
  }
  auto created = core::Group::create(client_, group_->prefix().sub("sub-" + key), rank, size,
                                     control_deadline(), core::GroupTraffic::kControl);
  return *subgroups_.emplace(key, std::move(created)).first->second;
}

void ShmObject::subgroup_barrier(const std::string& key, int size, int rank) {
  std::lock_guard<std::mutex> lock(collective_mutex_);
  subgroup(key, size, rank).collectives().barrier(control_deadline());
}

void ShmObject::subgroup_allgather(const std::string& key, int size, int rank, const void* send,
                                   uint32_t send_size, void* recv, uint32_t recv_size) {
  std::lock_guard<std::mutex> lock(collective_mutex_);
  allgather_on(subgroup(key, size, rank), send, send_size, recv, recv_size, control_deadline());
}

uint32_t ShmObject::reach(int remote) const {
  MEMLOOM_CHECK_ARG(remote >= 0 && remote < size(), "remoteRank " + std::to_string(remote) +
                                                        " is out of range [0, " +
                                                        std::to_string(size()) + ")");
  return group_->same_node(rank(), remote) ? kSupportedDataOps : 0u;
}

int32_t ShmObject::alloc_value(uint32_t limit) {
  MEMLOOM_CHECK_ARG(limit >= 1 && limit <= SMEM_SHM_ATOMIC_NUM_LIMIT,
                    "limit " + std::to_string(limit) + " is out of range [1, " +
                        std::to_string(SMEM_SHM_ATOMIC_NUM_LIMIT) + "]");
  const std::string owner = std::to_string(rank());
  for (uint32_t value = 0; value < limit; ++value) {
    if (client_->compare_and_swap(group_->prefix()("atomic/" + std::to_string(value)), "", owner,
                                  true, nullptr)) {
      return static_cast<int32_t>(value);
    }
  }
  // MemFabric answers an exhausted range with its generic SM_ERROR.
  throw FacadeError(SMEM_ERROR, Status::kOutOfMemory,
                    "every number below " + std::to_string(limit) + " is already allocated");
}

void ShmObject::release_value(int32_t value) {
  MEMLOOM_CHECK_ARG(value >= 0 && static_cast<uint32_t>(value) < SMEM_SHM_ATOMIC_NUM_LIMIT,
                    "value " + std::to_string(value) + " is out of range [0, " +
                        std::to_string(SMEM_SHM_ATOMIC_NUM_LIMIT) + ")");
  if (!client_->remove(group_->prefix()("atomic/" + std::to_string(value)))) {
    raise(Status::kNotFound, "value " + std::to_string(value) + " is not allocated");
  }
}

void ShmObject::register_exit(void (*handler)(int)) {
  MEMLOOM_CHECK_ARG(handler != nullptr, "the exit function is null");
  exit_->register_handler(handler);
}

void ShmObject::global_exit(int status) {
  exit_->trigger(status);
}

}  // namespace memloom::smem
