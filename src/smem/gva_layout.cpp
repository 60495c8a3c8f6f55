#include "src/smem/gva_layout.h"

#include "memloom/error.h"
#include "src/base/hex.h"

namespace memloom::smem {

using base::hex;

GvaLayout::GvaLayout(std::string name, uintptr_t base, size_t stride, std::vector<size_t> filled)
    : name_(std::move(name)), base_(base), stride_(stride), filled_(std::move(filled)) {
  for (size_t r = 0; r < filled_.size(); ++r) {
    if (filled_[r] > stride_) {
      raise(Status::kLogic, name_ + " range: rank " + std::to_string(r) + " fills " +
                                std::to_string(filled_[r]) + " bytes of a " +
                                std::to_string(stride_) + "-byte slot");
    }
  }
}

void* GvaLayout::slot(int rank) const {
  if (empty() || rank < 0 || rank >= slots()) {
    raise(Status::kInvalidInput, "rank " + std::to_string(rank) + " has no slot in the " + name_ +
                                     " range (" + std::to_string(slots()) + " slots of " +
                                     std::to_string(stride_) + " bytes)");
  }
  return reinterpret_cast<void*>(base_ + static_cast<uintptr_t>(rank) * stride_);
}

bool GvaLayout::contains(const void* address) const {
  return rank_of(address) >= 0;
}

int GvaLayout::rank_of(const void* address) const {
  auto a = reinterpret_cast<uintptr_t>(address);
  if (empty() || a < base_ || a - base_ >= size()) return -1;
  return static_cast<int>((a - base_) / stride_);
}

bool GvaLayout::overlaps(const void* address, size_t bytes) const {
  auto a = reinterpret_cast<uintptr_t>(address);
  if (empty() || bytes == 0) return false;
  return a < base_ + size() && (a >= base_ || base_ - a < bytes);
}

GvaSpan GvaLayout::locate(const void* address, size_t bytes, const char* what) const {
  auto a = reinterpret_cast<uintptr_t>(address);
  int rank = rank_of(address);
  if (rank < 0) {
    raise(Status::kInvalidInput, std::string(what) + " " + hex(a) + " is outside the " + name_ +
                                     " range [" + hex(base_) + ", " + hex(base_ + size()) + ")");
  }
  GvaSpan span{rank, static_cast<size_t>(a - base_) - static_cast<size_t>(rank) * stride_};
  if (bytes > stride_ - span.offset) {
    raise(Status::kInvalidInput, std::string(what) + " [" + hex(a) + ", +" + std::to_string(bytes) +
                                     ") crosses the end of rank " + std::to_string(rank) +
                                     "'s slot in the " + name_ + " range (slot " +
                                     hex(base_ + static_cast<uintptr_t>(rank) * stride_) + ", " +
                                     std::to_string(stride_) + " bytes)");
  }
  if (span.offset + bytes > filled_[static_cast<size_t>(rank)]) {
    raise(Status::kInvalidInput,
          std::string(what) + " [" + hex(a) + ", +" + std::to_string(bytes) + ") goes past the " +
              std::to_string(filled_[static_cast<size_t>(rank)]) + " bytes rank " +
              std::to_string(rank) + " contributes to the " + name_ + " range");
  }
  return span;
}

}  // namespace memloom::smem
