// Loading a WholeMemory allocation from binary files and storing each rank's partition to its own
// file. Files are entries of file_entry_size bytes, logically concatenated; memory holds entries
// of memory_entry_size bytes with the file's columns at memory_offset. Every rank reads or writes
// only its own partition, through copies (so device memory works too).
#pragma once

#include "memloom/deadline.h"
#include "src/wholememory/memory_handle.h"

namespace memloom::wholememory {

struct FileLayout {
  size_t memory_offset = 0;      // where the file's columns start inside a memory entry
  size_t memory_entry_size = 0;  // bytes of one memory entry (the stride)
  size_t file_entry_size = 0;    // bytes of one file entry (<= memory_entry_size - memory_offset)
};

// Collective. round_robin_size R > 0 deals blocks of R file entries to the ranks in turn, each
// rank packing its entries from the start of its partition; R == 0 places entry i at memory entry
// i. Fails on every rank when any rank's files differ, do not fit, or cannot be read.
// A rank's own bad arguments (null names, a missing file) fail every rank too.
void load_from_files(MemoryHandle& memory, const FileLayout& layout, const char* const* file_names,
                     int file_count, int round_robin_size, Deadline deadline);

// Collective: writes the entries of this rank's partition to `file_name`.
void store_to_file(MemoryHandle& memory, const FileLayout& layout, const char* file_name,
                   Deadline deadline);

}  // namespace memloom::wholememory
