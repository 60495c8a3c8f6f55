// The one stride rule of every MemFabric global virtual address (GVA) range, shared by SHM and BM:
// rank r's slot starts at base + r * stride, in every process. Pointer -> rank and rank -> pointer
// both go through this class, so they cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memloom::smem {

// Where a byte range lies in a GVA range.
struct GvaSpan {
  int rank = -1;      // the slot's rank
  size_t offset = 0;  // from the slot's start
};

class GvaLayout {
 public:
  GvaLayout() = default;
  // `filled[r]` is how many bytes of rank r's slot are backed by memory (<= stride); a range with
  // stride 0 is empty and contains nothing.
  GvaLayout(std::string name, uintptr_t base, size_t stride, std::vector<size_t> filled);

  const std::string& name() const { return name_; }
  bool empty() const { return stride_ == 0 || filled_.empty(); }
  uintptr_t base() const { return base_; }
  size_t stride() const { return stride_; }
  int slots() const { return static_cast<int>(filled_.size()); }
  size_t size() const { return stride_ * filled_.size(); }
  size_t filled(int rank) const { return filled_.at(static_cast<size_t>(rank)); }

  // Rank r's slot start; throws kInvalidInput when r is not a slot of this range.
  void* slot(int rank) const;
  bool contains(const void* address) const;
  // The rank whose slot holds `address`, or -1 when it lies outside the range.
  int rank_of(const void* address) const;
  // Whether [address, address + bytes) overlaps the range at all.
  bool overlaps(const void* address, size_t bytes) const;

  // Locates [address, address + bytes): throws kInvalidInput (naming `what`) unless it lies inside
  // the range, inside one slot, and inside that slot's filled bytes.
  GvaSpan locate(const void* address, size_t bytes, const char* what) const;

 private:
  std::string name_;
  uintptr_t base_ = 0;
  size_t stride_ = 0;
  std::vector<size_t> filled_;
};

}  // namespace memloom::smem
