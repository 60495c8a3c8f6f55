// The embedding's gradient apply on the CUDA backend (issue 21): one rank on GPU 0, a 1M x 128
// FLOAT embedding in device memory with lazy Adam, every row once per call in a random order,
// gradients and indices in device memory, timed with CUDA events on the rank's own stream.
//
// Where the time goes, two ways, since the call is one synchronous API:
//   - variants of the call, timed like the figure: all indices -1 (checked, sorted and grouped,
//     no row updated: the call less the optimizer's bytes) and a single index (the call's fixed
//     cost: launches, waits, allocations); and the bench's own plain lazy-Adam kernel over the
//     same bytes (gpu_apply_reference.h), what the optimizer step alone could take;
//   - a second job with MEMLOOM_CUDA_PHASE_TIMES=1 (hw/cuda/cuda_phase_times.h), where the
//     backend brackets each kernel, copy and grouping step with timing events; the bench reads
//     the sums through the module's memloom_cuda_phase_times. Its events perturb the call a
//     little, so the headline figure comes from the first job only.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/embedding_tensors.h"
#include "bench/gpu/gpu_apply_reference.h"
#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"
#include "wholememory/embedding.h"

namespace memloom::bench::gpu {
namespace {

// One rank's embedding, optimizer, indices and gradients for the apply.
class ApplySetup {
 public:
  ApplySetup() {
    wholememory_unique_id_t id{};
    check_wholememory(wholememory_create_unique_id(&id), "wholememory_create_unique_id");
    check_wholememory(wholememory_create_communicator(&comm_, id, 0, 1),
                      "wholememory_create_communicator");
    wholememory_tensor_description_t desc = packed_description(kRows, kDim, WHOLEMEMORY_DT_FLOAT);
    check_wholememory(
        wholememory_create_embedding(&embedding_, &desc, comm_, WHOLEMEMORY_MT_CONTINUOUS,
                                     WHOLEMEMORY_ML_DEVICE, nullptr),
        "wholememory_create_embedding");
    check_wholememory(wholememory_create_embedding_optimizer(&adam_, WHOLEMEMORY_OPT_LAZY_ADAM),
                      "wholememory_create_embedding_optimizer");
    check_wholememory(wholememory_embedding_set_optimizer(embedding_, adam_),
                      "wholememory_embedding_set_optimizer");
    std::vector<int64_t> order(static_cast<size_t>(kRows));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(21));
    check_cuda(cudaMemcpy(indices_.data(), order.data(), order.size() * sizeof(int64_t),
                          cudaMemcpyHostToDevice),
               "uploading the indices");
    // Every byte 0xff: every index is -1, which asks for nothing.
    fill_device(none_.data(), 0xff, order.size() * sizeof(int64_t));
    fill_device(grads_.data(), 0, static_cast<size_t>(kRows) * kRowBytes);
    for (DeviceBuffer* buffer : {&weight_, &m_, &v_}) {
      fill_device(buffer->data(), 0, static_cast<size_t>(kRows) * kRowBytes);
    }
    index_tensor_ = pointer_tensor(indices_.data(), kRows, 0, WHOLEMEMORY_DT_INT64);
    none_tensor_ = pointer_tensor(none_.data(), kRows, 0, WHOLEMEMORY_DT_INT64);
    one_index_tensor_ = pointer_tensor(indices_.data(), 1, 0, WHOLEMEMORY_DT_INT64);
    grad_tensor_ = pointer_tensor(grads_.data(), kRows, kDim, WHOLEMEMORY_DT_FLOAT);
    one_grad_tensor_ = pointer_tensor(grads_.data(), 1, kDim, WHOLEMEMORY_DT_FLOAT);
  }

  ~ApplySetup() {
    for (auto* tensor :
         {index_tensor_, none_tensor_, one_index_tensor_, grad_tensor_, one_grad_tensor_}) {
      wholememory_destroy_tensor(tensor);
    }
    if (embedding_ != nullptr) wholememory_destroy_embedding(embedding_);
    if (adam_ != nullptr) wholememory_destroy_embedding_optimizer(adam_);
  }

  ApplySetup(const ApplySetup&) = delete;
  ApplySetup& operator=(const ApplySetup&) = delete;

  enum class Variant { kEveryRow, kNoRow, kOneRow };

  void apply(Variant variant) {
    wholememory_tensor_t indices = index_tensor_, grads = grad_tensor_;
    if (variant == Variant::kNoRow) indices = none_tensor_;
    if (variant == Variant::kOneRow) {
      indices = one_index_tensor_;
      grads = one_grad_tensor_;
    }
    check_wholememory(wholememory_embedding_gather_gradient_apply(
                          embedding_, indices, grads, false, 0.01F, nullptr,
                          reinterpret_cast<int64_t>(stream_.get())),
                      "wholememory_embedding_gather_gradient_apply");
  }

  // The bench's own lazy-Adam kernel (gpu_apply_reference.cu) over arrays of the same shape,
  // each row's gradient row taken in the shuffled order, as the apply reads them.
  void reference_step() {
    reference_adam_step(static_cast<float*>(weight_.data()), static_cast<float*>(m_.data()),
                        static_cast<float*>(v_.data()), static_cast<const float*>(grads_.data()),
                        static_cast<const int64_t*>(indices_.data()), kRows, static_cast<int>(kDim),
                        stream_.get());
  }

  cudaStream_t stream() const { return stream_.get(); }

 private:
  static constexpr auto kRows = static_cast<int64_t>(kApplyRows);
  static constexpr auto kDim = static_cast<int64_t>(kRowFloats);

  wholememory_comm_t comm_ = nullptr;
  wholememory_embedding_t embedding_ = nullptr;
  wholememory_embedding_optimizer_t adam_ = nullptr;
  DeviceBuffer indices_{kApplyRows * sizeof(int64_t), "apply indices"};
  DeviceBuffer none_{kApplyRows * sizeof(int64_t), "apply indices of no row"};
  DeviceBuffer grads_{kApplyRows * kRowBytes, "apply gradients"};
  DeviceBuffer weight_{kApplyRows * kRowBytes, "reference weights"};
  DeviceBuffer m_{kApplyRows * kRowBytes, "reference m"};
  DeviceBuffer v_{kApplyRows * kRowBytes, "reference v"};
  wholememory_tensor_t index_tensor_ = nullptr, none_tensor_ = nullptr;
  wholememory_tensor_t one_index_tensor_ = nullptr;
  wholememory_tensor_t grad_tensor_ = nullptr, one_grad_tensor_ = nullptr;
  Stream stream_;
};

// The CUDA module's memloom_cuda_phase_times (loaded by memloom with RTLD_LOCAL, so found by
// walking the loaded objects for its file); null when the module is not loaded.
using PhaseTimesFn = long (*)(char*, size_t);

int find_cuda_module(dl_phdr_info* info, size_t, void* found) {
  const char* name = info->dlpi_name;
  if (name == nullptr || std::strstr(name, "libmemloom_cuda.so") == nullptr) return 0;
  *static_cast<std::string*>(found) = name;
  return 1;
}

PhaseTimesFn phase_times_function() {
  std::string path;
  dl_iterate_phdr(find_cuda_module, &path);
  if (path.empty()) return nullptr;
  void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (module == nullptr) return nullptr;
  return reinterpret_cast<PhaseTimesFn>(dlsym(module, "memloom_cuda_phase_times"));
}

// "phase NAME" figures (seconds per call) from the module's text of sums over `calls` calls.
void add_phase_figures(const std::string& text, int calls, Figures& figures) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    figures["phase " + line.substr(0, tab)] = std::strtod(line.c_str() + tab + 1, nullptr) / calls;
  }
}

}  // namespace

Figures embedding_apply_rank(const RankInfo&) {
  use_device(0);
  check_wholememory(wholememory_init(0, LEVEL_WARN), "wholememory_init");
  Figures figures;
  try {
    ApplySetup setup;
    using Variant = ApplySetup::Variant;
    figures["apply"] = best_event_seconds(
        setup.stream(), [&] { setup.apply(Variant::kEveryRow); }, "embedding apply", 5, 2);
    figures["apply no row"] = best_event_seconds(
        setup.stream(), [&] { setup.apply(Variant::kNoRow); }, "embedding apply, no row", 5, 2);
    figures["apply one row"] = best_event_seconds(
        setup.stream(), [&] { setup.apply(Variant::kOneRow); }, "embedding apply, one row", 5, 2);
    figures["reference step"] = best_event_seconds(
        setup.stream(), [&] { setup.reference_step(); }, "reference Adam kernel", 5, 2);
  } catch (const std::exception& error) {
    print_failure("embedding apply", error.what());
  }
  wholememory_finalize();
  return figures;
}

Figures embedding_phases_rank(const RankInfo&) {
  // Read once by the module, at its first launch: set before anything starts.
  ::setenv("MEMLOOM_CUDA_PHASE_TIMES", "1", 1);
  use_device(0);
  check_wholememory(wholememory_init(0, LEVEL_WARN), "wholememory_init");
  Figures figures;
  try {
    ApplySetup setup;
    setup.apply(ApplySetup::Variant::kEveryRow);  // warm-up: allocations, module loads
    wait_stream(setup.stream(), "embedding apply (warm-up)");
    const PhaseTimesFn phase_times = phase_times_function();
    if (phase_times == nullptr) throw std::runtime_error("memloom_cuda_phase_times not found");
    std::vector<char> text(1 << 16);
    if (phase_times(text.data(), text.size()) < 0) {
      throw std::runtime_error("the CUDA module's phase timing is off");
    }
    constexpr int kCalls = 5;
    EventTimer timer;
    double total = 0;
    for (int call = 0; call < kCalls; ++call) {
      timer.start(setup.stream());
      setup.apply(ApplySetup::Variant::kEveryRow);
      total += timer.stop(setup.stream(), "embedding apply (phase times)");
    }
    const long length = phase_times(text.data(), text.size());
    add_phase_figures(std::string(text.data(), std::min<size_t>(length, text.size() - 1)), kCalls,
                      figures);
    figures["call"] = total / kCalls;
  } catch (const std::exception& error) {
    print_failure("embedding apply phases", error.what());
  }
  wholememory_finalize();
  return figures;
}

}  // namespace memloom::bench::gpu
