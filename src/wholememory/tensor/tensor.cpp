#include "src/wholememory/tensor/tensor.h"

#include <string>

#include "memloom/error.h"

namespace memloom::wholememory {
namespace {

// Tensor handles live in their own range, far from the communicator and allocation ids, so a
// handle of another kind passed as a tensor is refused rather than mistaken for one.
constexpr uintptr_t kFirstTensorId = 0x7e5000000;
constexpr uintptr_t kTensorIdStep = 16;

}  // namespace

size_t MatrixShape::element_bytes() const {
  return wholememory_dtype_get_element_size(dtype);
}

MatrixShape matrix_shape(const wholememory_tensor_description_t& desc, const char* what) {
  const std::string name(what);
  MEMLOOM_CHECK_ARG(desc.dim == 1 || desc.dim == 2,
                    name + " must be 1-D or 2-D, got dim " + std::to_string(desc.dim));
  MEMLOOM_CHECK_ARG(desc.dtype > WHOLEMEMORY_DT_UNKNOWN && desc.dtype < WHOLEMEMORY_DT_COUNT,
                    name + " has an unknown dtype " + std::to_string(static_cast<int>(desc.dtype)));
  MEMLOOM_CHECK_ARG(
      desc.strides[desc.dim - 1] == 1,
      name + "'s innermost stride must be 1, got " + std::to_string(desc.strides[desc.dim - 1]));
  MEMLOOM_CHECK_ARG(desc.storage_offset >= 0, name + "'s storage_offset is negative (" +
                                                  std::to_string(desc.storage_offset) + ")");
  MatrixShape shape;
  shape.rows = desc.sizes[0];
  shape.columns = desc.dim == 2 ? desc.sizes[1] : 1;
  shape.stride = desc.dim == 2 ? desc.strides[0] : 1;
  shape.offset = desc.storage_offset;
  shape.dtype = desc.dtype;
  MEMLOOM_CHECK_ARG(
      shape.rows >= 0 && shape.columns > 0,
      name + " has sizes " + std::to_string(shape.rows) + " x " + std::to_string(shape.columns));
  MEMLOOM_CHECK_ARG(shape.stride >= shape.columns,
                    name + "'s rows overlap: " + std::to_string(shape.columns) +
                        " columns in a row stride of " + std::to_string(shape.stride));
  return shape;
}

void check_rows_within_entries(const MatrixShape& shape, const char* what) {
  MEMLOOM_CHECK_ARG(shape.column_offset() + shape.columns <= shape.stride,
                    std::string(what) +
                        "'s rows cross entries of its storage: " + std::to_string(shape.columns) +
                        " columns from column " + std::to_string(shape.column_offset()) +
                        " of a row stride of " + std::to_string(shape.stride));
}

TensorRegistry& TensorRegistry::instance() {
  static auto* registry = new TensorRegistry();  // never destroyed, like the Runtime
  return *registry;
}

wholememory_tensor_t TensorRegistry::add(Tensor tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_id_ = last_id_ == 0 ? kFirstTensorId : last_id_ + kTensorIdStep;
  auto handle = reinterpret_cast<wholememory_tensor_t>(last_id_);
  if (tensor.root == nullptr) tensor.root = handle;
  tensors_.emplace(last_id_, std::make_unique<Tensor>(tensor));
  return handle;
}

Tensor* TensorRegistry::find(wholememory_tensor_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = tensors_.find(reinterpret_cast<uintptr_t>(handle));
  return found == tensors_.end() ? nullptr : found->second.get();
}

Tensor TensorRegistry::get(wholememory_tensor_t handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = tensors_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == tensors_.end()) {
    raise(Status::kInvalidInput, "tensor handle is not a live tensor (destroyed or garbage)");
  }
  return *found->second;
}

Tensor TensorRegistry::remove(wholememory_tensor_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = tensors_.find(reinterpret_cast<uintptr_t>(handle));
  if (found == tensors_.end()) {
    raise(Status::kInvalidInput, "tensor handle is not a live tensor (destroyed or garbage)");
  }
  Tensor removed = *found->second;
  tensors_.erase(found);
  return removed;
}

int64_t TensorRegistry::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(tensors_.size());
}

}  // namespace memloom::wholememory
