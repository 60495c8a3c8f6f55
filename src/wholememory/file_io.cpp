#include "src/wholememory/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "memloom/error.h"
#include "src/base/progress_report.h"
#include "src/wholememory/blocking_copy.h"
#include "src/wholememory/collective_check.h"

namespace memloom::wholememory {
namespace {

// Bytes of file data staged per copy.
constexpr size_t kChunkBytes = 4u << 20;

std::string describe(const FileLayout& layout) {
  return "memory_offset=" + std::to_string(layout.memory_offset) +
         " memory_entry_size=" + std::to_string(layout.memory_entry_size) +
         " file_entry_size=" + std::to_string(layout.file_entry_size);
}

// The layout must fit in a memory entry, and no memory entry may straddle two partitions.
void check_layout(const FileLayout& layout, const PartitionPlan& plan) {
  const size_t entry = layout.memory_entry_size;
  if (entry == 0 || layout.file_entry_size == 0) {
    raise(Status::kInvalidValue, "entry sizes must be positive (" + describe(layout) + ")");
  }
  if (layout.memory_offset >= entry || layout.file_entry_size > entry - layout.memory_offset) {
    raise(Status::kInvalidValue,
          "file entries do not fit in memory entries (" + describe(layout) + ")");
  }
  for (size_t r = 0; r < plan.offsets.size(); ++r) {
    if (plan.offsets[r] % entry != 0) {
      raise(Status::kInvalidValue,
            (r + 1 < plan.offsets.size() ? "rank " + std::to_string(r) + "'s partition starts"
                                         : std::string("the allocation ends")) +
                " at byte " + std::to_string(plan.offsets[r]) +
                ", not at a multiple of memory_entry_size " + std::to_string(entry));
    }
  }
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { close(); }
  // Closes now; returns what close(2) returned (a late write error shows up here).
  int close() {
    const int result = fd_ >= 0 ? ::close(fd_) : 0;
    fd_ = -1;
    return result;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The logical concatenation of the input files.
class FileSequence {
 public:
  FileSequence(std::vector<std::string> names, std::vector<size_t> sizes)
      : names_(std::move(names)), sizes_(std::move(sizes)) {}

  // Reads `bytes` from logical byte `offset` on, across file boundaries.
  void read(size_t offset, size_t bytes, char* out) {
    size_t file = 0;
    while (file < sizes_.size() && offset >= sizes_[file]) offset -= sizes_[file++];
    while (bytes > 0) {
      if (file >= sizes_.size()) raise(Status::kLogic, "read past the end of the input files");
      const size_t piece = std::min(bytes, sizes_[file] - offset);
      read_from(file, offset, piece, out);
      out += piece;
      bytes -= piece;
      offset = 0;
      ++file;
    }
  }

 private:
  void read_from(size_t file, size_t offset, size_t bytes, char* out) {
    FileDescriptor fd(::open(names_[file].c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) raise_errno("cannot open '" + names_[file] + "' for reading", errno);
    while (bytes > 0) {
      const ssize_t got = ::pread(fd.get(), out, bytes, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) raise_errno("reading '" + names_[file] + "' failed", errno);
      if (got == 0)
        raise(Status::kSystem, "'" + names_[file] + "' became shorter while being read");
      out += got;
      offset += static_cast<size_t>(got);
      bytes -= static_cast<size_t>(got);
    }
  }

  std::vector<std::string> names_;
  std::vector<size_t> sizes_;
};

// Moves packed file entries into, or out of, whole memory entries of this rank's partition.
class EntryMover {
 public:
  EntryMover(MemoryHandle& memory, const FileLayout& layout, int device)
      : local_(static_cast<char*>(memory.local_pointer())), layout_(layout), copier_(device) {}

  void write(size_t first_entry, size_t count, const char* packed) {
    char* dst = local_ + first_entry * layout_.memory_entry_size;
    if (layout_.file_entry_size == layout_.memory_entry_size) {
      copier_.copy(dst, packed, count * layout_.file_entry_size);
      return;
    }
    // Narrower file entries: read the rows, patch the columns, write the rows back. Only this
    // rank's partition is touched, so no other rank races with it.
    rows_.resize(count * layout_.memory_entry_size);
    copier_.copy(rows_.data(), dst, rows_.size());
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(rows_.data() + i * layout_.memory_entry_size + layout_.memory_offset,
                  packed + i * layout_.file_entry_size, layout_.file_entry_size);
    }
    copier_.copy(dst, rows_.data(), rows_.size());
  }

  void read(size_t first_entry, size_t count, char* packed) {
    const char* src = local_ + first_entry * layout_.memory_entry_size;
    if (layout_.file_entry_size == layout_.memory_entry_size) {
      copier_.copy(packed, src, count * layout_.file_entry_size);
      return;
    }
    rows_.resize(count * layout_.memory_entry_size);
    copier_.copy(rows_.data(), src, rows_.size());
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(packed + i * layout_.file_entry_size,
                  rows_.data() + i * layout_.memory_entry_size + layout_.memory_offset,
                  layout_.file_entry_size);
    }
  }

  // Entries per staged chunk.
  size_t chunk_entries() const {
    return std::max<size_t>(1, kChunkBytes / layout_.memory_entry_size);
  }

 private:
  char* local_;
  FileLayout layout_;
  BlockingCopier copier_;
  std::vector<char> rows_;
};

// A run of consecutive file entries landing on consecutive entries of my partition.
struct Run {
  size_t file_entry;
  size_t count;
  size_t local_entry;
};

// How many of `total` entries dealt in blocks of `block` over `ranks` ranks go to `rank`.
size_t dealt_entries(size_t total, size_t block, size_t ranks, size_t rank) {
  const size_t round = block * ranks;
  const size_t remainder = total % round;
  const size_t start = rank * block;
  return total / round * block + (remainder > start ? std::min(block, remainder - start) : 0);
}

std::vector<Run> plan_runs(const PartitionPlan& plan, size_t entry_size, size_t total_entries,
                           size_t round_robin, int rank) {
  const int ranks = plan.world_size();
  std::vector<Run> runs;
  if (round_robin == 0) {
    if (total_entries > plan.total() / entry_size) {
      raise(Status::kInvalidValue, "the files hold " + std::to_string(total_entries) +
                                       " entries but the allocation holds only " +
                                       std::to_string(plan.total() / entry_size));
    }
    const size_t first = plan.offsets[rank] / entry_size;
    const size_t last = std::min(first + plan.sizes[rank] / entry_size, total_entries);
    if (last > first) runs.push_back({first, last - first, 0});
    return runs;
  }
  for (int r = 0; r < ranks; ++r) {
    const size_t needed = dealt_entries(total_entries, round_robin, ranks, r);
    if (needed > plan.sizes[r] / entry_size) {
      raise(Status::kInvalidValue, "round robin of " + std::to_string(round_robin) + " deals " +
                                       std::to_string(needed) + " entries to rank " +
                                       std::to_string(r) + " whose partition holds only " +
                                       std::to_string(plan.sizes[r] / entry_size));
    }
  }
  for (size_t block = rank, local = 0; block * round_robin < total_entries;
       block += ranks, local += round_robin) {
    const size_t first = block * round_robin;
    runs.push_back({first, std::min(round_robin, total_entries - first), local});
  }
  return runs;
}

}  // namespace

void load_from_files(MemoryHandle& memory, const FileLayout& layout, const char* const* file_names,
                     int file_count, int round_robin_size, Deadline deadline) {
  auto& group = memory.comm().group();
  std::vector<std::string> names;
  std::vector<size_t> sizes;
  auto local = capture_failure([&] {
    check_layout(layout, memory.plan());
    if (round_robin_size < 0) {
      raise(Status::kInvalidValue,
            "round_robin_size must not be negative, got " + std::to_string(round_robin_size));
    }
    MEMLOOM_CHECK_ARG(file_count > 0,
                      "file_count must be positive, got " + std::to_string(file_count));
    MEMLOOM_CHECK_ARG(file_names != nullptr, "file_names is null");
    for (int i = 0; i < file_count; ++i) {
      MEMLOOM_CHECK_ARG(file_names[i] != nullptr, "file_names[" + std::to_string(i) + "] is null");
      struct stat info {};
      if (::stat(file_names[i], &info) != 0) {
        raise(Status::kInvalidInput,
              std::string("cannot open '") + file_names[i] + "': " + std::strerror(errno));
      }
      if (!S_ISREG(info.st_mode)) {
        raise(Status::kInvalidInput, std::string("'") + file_names[i] + "' is not a regular file");
      }
      const auto size = static_cast<size_t>(info.st_size);
      if (size % layout.file_entry_size != 0) {
        raise(Status::kInvalidValue, std::string("'") + file_names[i] + "' has " +
                                         std::to_string(size) +
                                         " bytes, not a multiple of file_entry_size " +
                                         std::to_string(layout.file_entry_size));
      }
      names.emplace_back(file_names[i]);
      sizes.push_back(size);
    }
  });
  std::string arguments =
      describe(layout) + " round_robin=" + std::to_string(round_robin_size) + " file sizes=";
  for (size_t size : sizes) arguments += std::to_string(size) + ",";
  agree_on_arguments(group, "wholememory_load_from_file", arguments, local, deadline);

  // Every rank now holds the same sizes, so the checks below fail on all ranks alike.
  size_t total_bytes = 0;
  for (size_t size : sizes) total_bytes += size;
  const auto runs =
      plan_runs(memory.plan(), layout.memory_entry_size, total_bytes / layout.file_entry_size,
                static_cast<size_t>(round_robin_size), group.rank());

  local = capture_failure([&] {
    FileSequence input(names, sizes);
    EntryMover mover(memory, layout, memory.device());
    std::vector<char> packed;
    size_t my_bytes = 0;
    for (const Run& run : runs) my_bytes += run.count * layout.file_entry_size;
    base::ProgressReport progress(
        "wholememory_load_from_file (rank " + std::to_string(group.rank()) + ")", my_bytes);
    for (const Run& run : runs) {
      for (size_t done = 0; done < run.count;) {
        const size_t count = std::min(mover.chunk_entries(), run.count - done);
        packed.resize(count * layout.file_entry_size);
        input.read((run.file_entry + done) * layout.file_entry_size, packed.size(), packed.data());
        mover.write(run.local_entry + done, count, packed.data());
        progress.advance(packed.size());
        done += count;
      }
    }
  });
  fail_together(group, "wholememory_load_from_file", local, deadline);
}

void store_to_file(MemoryHandle& memory, const FileLayout& layout, const char* file_name,
                   Deadline deadline) {
  auto& group = memory.comm().group();
  auto local = capture_failure([&] {
    check_layout(layout, memory.plan());
    MEMLOOM_CHECK_ARG(file_name != nullptr, "local_file_name is null");
  });
  agree_on_arguments(group, "wholememory_store_to_file", describe(layout), local, deadline);

  local = capture_failure([&] {
    FileDescriptor fd(::open(file_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.get() < 0)
      raise_errno(std::string("cannot open '") + file_name + "' for writing", errno);
    EntryMover mover(memory, layout, memory.device());
    const size_t entries = memory.local_size() / layout.memory_entry_size;
    std::vector<char> packed;
    base::ProgressReport progress(
        "wholememory_store_to_file (rank " + std::to_string(group.rank()) + ")",
        entries * layout.file_entry_size);
    for (size_t done = 0; done < entries;) {
      const size_t count = std::min(mover.chunk_entries(), entries - done);
      packed.resize(count * layout.file_entry_size);
      mover.read(done, count, packed.data());
      for (size_t written = 0; written < packed.size();) {
        const ssize_t put = ::write(fd.get(), packed.data() + written, packed.size() - written);
        if (put < 0 && errno == EINTR) continue;
        if (put < 0) raise_errno(std::string("writing '") + file_name + "' failed", errno);
        written += static_cast<size_t>(put);
      }
      progress.advance(packed.size());
      done += count;
    }
    if (fd.close() != 0) raise_errno(std::string("closing '") + file_name + "' failed", errno);
  });
  fail_together(group, "wholememory_store_to_file", local, deadline);
}

}  // namespace memloom::wholememory
