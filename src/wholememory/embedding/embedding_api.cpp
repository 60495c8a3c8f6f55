// The embedding C API (wholememory/embedding.h): handles in, objects of embedding.h and
// optimizer.h out, every entry point through the one exception boundary.
#include <memory>
#include <string>

#include "src/wholememory/embedding/embedding.h"
#include "src/wholememory/embedding/handle_table.h"
#include "src/wholememory/enum_arguments.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/embedding.h"

namespace wm = memloom::wholememory;
using memloom::raise;
using memloom::Status;

namespace {

wm::HandleTable<wm::Optimizer, wholememory_embedding_optimizer_t>& optimizers() {
  static auto* table =
      new wm::HandleTable<wm::Optimizer, wholememory_embedding_optimizer_t>("optimizer");
  return *table;
}

wm::HandleTable<wm::CachePolicy, wholememory_embedding_cache_policy_t>& cache_policies() {
  static auto* table =
      new wm::HandleTable<wm::CachePolicy, wholememory_embedding_cache_policy_t>("cache_policy");
  return *table;
}

wm::HandleTable<wm::Embedding, wholememory_embedding_t>& embeddings() {
  static auto* table =
      new wm::HandleTable<wm::Embedding, wholememory_embedding_t>("wholememory_embedding");
  return *table;
}

void* stream_of(int64_t stream_int) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(stream_int));
}

}  // namespace

extern "C" {

wholememory_error_code_t wholememory_create_embedding_optimizer(
    wholememory_embedding_optimizer_t* optimizer, wholememory_optimizer_type_t optimizer_type) {
  return wm::guarded("wholememory_create_embedding_optimizer", [&] {
    wm::checked_output(optimizer, "optimizer");
    *optimizer = nullptr;
    // Checked as bits before it is an enum again: a value outside the enum's range would be
    // undefined behaviour in the optimizer's switch (UBSan's -fsanitize=enum catches it).
    const int type = wm::enum_bits(optimizer_type);
    if (type <= WHOLEMEMORY_OPT_NONE || type > WHOLEMEMORY_OPT_ADAGRAD) {
      raise(Status::kNotImplemented, "optimizer type " + std::to_string(type) +
                                         " is not an optimizer (SGD, LAZY_ADAM, RMSPROP, ADAGRAD)");
    }
    *optimizer = optimizers().add(
        std::make_shared<wm::Optimizer>(static_cast<wholememory_optimizer_type_t>(type)));
  });
}

wholememory_error_code_t wholememory_optimizer_set_parameter(
    wholememory_embedding_optimizer_t optimizer, const char* parameter_name, void* value) {
  return wm::guarded("wholememory_optimizer_set_parameter", [&] {
    auto object = optimizers().get(optimizer);
    MEMLOOM_CHECK_ARG(parameter_name != nullptr, "parameter_name is null");
    MEMLOOM_CHECK_ARG(value != nullptr, "value is null");
    object->set_parameter(parameter_name, *static_cast<const float*>(value));
  });
}

void wholememory_destroy_embedding_optimizer(wholememory_embedding_optimizer_t optimizer) {
  (void)wm::guarded("wholememory_destroy_embedding_optimizer",
                    [&] { optimizers().remove(optimizer); });
}

wholememory_error_code_t wholememory_create_embedding_cache_policy(
    wholememory_embedding_cache_policy_t* cache_policy, wholememory_comm_t cache_level_comm,
    wholememory_memory_type_t memory_type, wholememory_memory_location_t memory_location,
    wholememory_access_type_t access_type, float cache_ratio) {
  return wm::guarded("wholememory_create_embedding_cache_policy", [&] {
    wm::checked_output(cache_policy, "cache_policy");
    *cache_policy = nullptr;
    MEMLOOM_CHECK_ARG(cache_level_comm != nullptr, "cache_level_comm is null");
    wm::checked_enum(memory_type, WHOLEMEMORY_MT_CONTINUOUS, WHOLEMEMORY_MT_HIERARCHY,
                     "memory_type");
    wm::checked_enum(memory_location, WHOLEMEMORY_ML_DEVICE, WHOLEMEMORY_ML_HOST,
                     "memory_location");
    wm::checked_enum(access_type, WHOLEMEMORY_AT_READONLY, WHOLEMEMORY_AT_READWRITE, "access_type");
    // 0 is accepted too (nothing cached), for sweeping the ratio.
    MEMLOOM_CHECK_ARG(cache_ratio >= 0.0F && cache_ratio <= 1.0F,
                      "cache_ratio must be in [0, 1], got " + std::to_string(cache_ratio));
    auto policy = std::make_shared<wm::CachePolicy>();
    *policy = {cache_level_comm, memory_type, memory_location, access_type, cache_ratio};
    *cache_policy = cache_policies().add(std::move(policy));
  });
}

wholememory_error_code_t wholememory_destroy_embedding_cache_policy(
    wholememory_embedding_cache_policy_t cache_policy) {
  return wm::guarded("wholememory_destroy_embedding_cache_policy",
                     [&] { cache_policies().remove(cache_policy); });
}

wholememory_error_code_t wholememory_create_embedding(
    wholememory_embedding_t* wholememory_embedding,
    wholememory_tensor_description_t* embedding_tensor_description, wholememory_comm_t comm,
    wholememory_memory_type_t memory_type, wholememory_memory_location_t memory_location,
    wholememory_embedding_cache_policy_t cache_policy, size_t* embedding_entry_partition,
    int user_defined_sms, int round_robin_size) {
  (void)user_defined_sms;  // launches are sized by the backend
  return wm::guarded("wholememory_create_embedding", [&] {
    wm::checked_output(wholememory_embedding, "wholememory_embedding");
    *wholememory_embedding = nullptr;
    wm::checked_output(embedding_tensor_description, "embedding_tensor_description");
    if (round_robin_size != 0) {
      raise(Status::kNotImplemented, "round_robin_size (round-robin sharding) is not implemented");
    }
    std::shared_ptr<wm::CachePolicy> policy;
    if (cache_policy != nullptr) policy = cache_policies().get(cache_policy);
    auto embedding =
        std::make_shared<wm::Embedding>(*embedding_tensor_description, comm, memory_type,
                                        memory_location, policy.get(), embedding_entry_partition);
    *wholememory_embedding = embeddings().add(std::move(embedding));
  });
}

wholememory_error_code_t wholememory_destroy_embedding(
    wholememory_embedding_t wholememory_embedding) {
  return wm::guarded("wholememory_destroy_embedding",
                     [&] { embeddings().remove(wholememory_embedding)->destroy(); });
}

wholememory_tensor_t wholememory_embedding_get_embedding_tensor(
    wholememory_embedding_t wholememory_embedding) {
  return wm::guarded_value<wholememory_tensor_t>(
      "wholememory_embedding_get_embedding_tensor", nullptr,
      [&] { return embeddings().get(wholememory_embedding)->table(); });
}

wholememory_error_code_t wholememory_embedding_set_optimizer(
    wholememory_embedding_t wholememory_embedding, wholememory_embedding_optimizer_t optimizer) {
  return wm::guarded("wholememory_embedding_set_optimizer", [&] {
    auto embedding = embeddings().get(wholememory_embedding);
    embedding->set_optimizer(optimizers().get(optimizer));
  });
}

wholememory_error_code_t wholememory_embedding_gather(wholememory_embedding_t wholememory_embedding,
                                                      wholememory_tensor_t indices,
                                                      wholememory_tensor_t output,
                                                      bool adjust_cache,
                                                      wholememory_env_func_t* p_env_fns,
                                                      int64_t stream_int) {
  (void)adjust_cache;  // the cache fills in collective calls (embedding.h)
  return wm::guarded("wholememory_embedding_gather", [&] {
    embeddings()
        .get(wholememory_embedding)
        ->gather(indices, output, p_env_fns, stream_of(stream_int));
  });
}

wholememory_error_code_t wholememory_embedding_gather_gradient_apply(
    wholememory_embedding_t wholememory_embedding, wholememory_tensor_t indices,
    wholememory_tensor_t grads, bool adjust_cache, float lr, wholememory_env_func_t* p_env_fns,
    int64_t stream_int) {
  (void)adjust_cache;
  return wm::guarded("wholememory_embedding_gather_gradient_apply", [&] {
    embeddings()
        .get(wholememory_embedding)
        ->apply(indices, grads, lr, p_env_fns, stream_of(stream_int));
  });
}

const char* const* wholememory_embedding_get_optimizer_state_names(
    wholememory_embedding_t wholememory_embedding) {
  return wm::guarded_value<const char* const*>(
      "wholememory_embedding_get_optimizer_state_names", nullptr,
      [&] { return embeddings().get(wholememory_embedding)->state_names(); });
}

wholememory_tensor_t wholememory_embedding_get_optimizer_state(
    wholememory_embedding_t wholememory_embedding, const char* name) {
  return wm::guarded_value<wholememory_tensor_t>(
      "wholememory_embedding_get_optimizer_state", nullptr,
      [&] { return embeddings().get(wholememory_embedding)->state(name); });
}

wholememory_error_code_t wholememory_embedding_writeback_cache(
    wholememory_embedding_t wholememory_embedding, int64_t stream_int) {
  return wm::guarded("wholememory_embedding_writeback_cache", [&] {
    embeddings().get(wholememory_embedding)->writeback_cache(stream_of(stream_int));
  });
}

wholememory_error_code_t wholememory_embedding_drop_all_cache(
    wholememory_embedding_t wholememory_embedding, int64_t stream_int) {
  return wm::guarded("wholememory_embedding_drop_all_cache", [&] {
    embeddings().get(wholememory_embedding)->drop_cache(stream_of(stream_int));
  });
}

}  // extern "C"
