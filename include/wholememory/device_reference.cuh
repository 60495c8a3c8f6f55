/*
 * memloom's WholeMemory device reference (drop-in for WholeMemory's
 * wholememory/device_reference.cuh): element access to a CONTINUOUS or CHUNKED allocation through
 * its global reference (wholememory_get_global_reference), from CUDA kernels and, compiled as
 * C++, from host code over memory the host can read (the emulated backend's devices, host
 * memory).
 *
 *   wholememory::device_reference<float> table(gref);
 *   float x = table[i];  // element i of the whole allocation, whichever rank holds it
 *
 * A continuous reference (stride 0) indexes its pointer directly. A chunked one finds the owner of
 * element i by dividing by the stride when every chunk but the last ones has stride bytes
 * (same_chunk), and otherwise by a binary search of rank_memory_offsets, so any rank count and
 * any caller-given partition work.
 */
#ifndef MEMLOOM_WHOLEMEMORY_DEVICE_REFERENCE_CUH_
#define MEMLOOM_WHOLEMEMORY_DEVICE_REFERENCE_CUH_

#include <assert.h>
#include <stddef.h>
#include <wholememory/global_reference.h>

#if defined(__CUDACC__)
#define WHOLEMEMORY_REFERENCE_FN_ __host__ __device__ __forceinline__
#else
#define WHOLEMEMORY_REFERENCE_FN_ inline
#endif

namespace wholememory {

template <typename DataTypeT>
class device_reference {
 public:
  WHOLEMEMORY_REFERENCE_FN_ explicit device_reference(const wholememory_gref_t& gref)
      : pointer_(gref.pointer),
        offsets_(gref.rank_memory_offsets),
        world_size_(gref.world_size),
        stride_(gref.stride),
        same_chunk_(gref.same_chunk) {
    assert(gref.stride % sizeof(DataTypeT) == 0);
  }
  device_reference() = delete;

  WHOLEMEMORY_REFERENCE_FN_ DataTypeT& operator[](size_t index) const {
    if (stride_ == 0) return static_cast<DataTypeT*>(pointer_)[index];
    const size_t byte = index * sizeof(DataTypeT);
    size_t rank = 0;
    size_t start = 0;
    if (same_chunk_) {
      rank = byte / stride_;
      start = rank * stride_;
    } else {
      // offsets_[low] <= byte < offsets_[high]; empty partitions share their offset with the next.
      size_t low = 0;
      size_t high = static_cast<size_t>(world_size_);
      while (high - low > 1) {
        const size_t middle = low + (high - low) / 2;
        if (offsets_[middle] <= byte) {
          low = middle;
        } else {
          high = middle;
        }
      }
      rank = low;
      start = offsets_[low];
    }
    char* chunk = static_cast<char* const*>(pointer_)[rank];
    return *reinterpret_cast<DataTypeT*>(chunk + (byte - start));
  }

 private:
  void* pointer_;
  const size_t* offsets_;
  int world_size_;
  size_t stride_;
  bool same_chunk_;
};

}  // namespace wholememory

#undef WHOLEMEMORY_REFERENCE_FN_

#endif /* MEMLOOM_WHOLEMEMORY_DEVICE_REFERENCE_CUH_ */
