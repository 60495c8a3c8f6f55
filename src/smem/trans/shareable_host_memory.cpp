#include "src/smem/trans/shareable_host_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "memloom/error.h"

namespace memloom::smem::trans {

std::unique_ptr<ShareableHostMemory> ShareableHostMemory::allocate(size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t physical = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) * page;
  if (bytes == 0 || bytes > physical) {
    raise(Status::kOutOfMemory, "cannot allocate " + std::to_string(bytes) +
                                    " bytes: the host has " + std::to_string(physical) +
                                    " bytes of memory");
  }
  std::unique_ptr<ShareableHostMemory> segment(new ShareableHostMemory());
  segment->fd_.reset(::memfd_create("memloom-trans-malloc", MFD_CLOEXEC));
  if (!segment->fd_.valid()) raise_errno("memfd_create", errno);
  const size_t rounded = (bytes + page - 1) / page * page;
  int error = ::posix_fallocate(segment->fd_.get(), 0, static_cast<off_t>(rounded));
  if (error != 0) {
    if (error == ENOSPC || error == ENOMEM || error == EFBIG) {
      raise(Status::kOutOfMemory, "cannot allocate " + std::to_string(bytes) +
                                      " bytes of host memory: " + std::strerror(error));
    }
    raise(Status::kSystem, std::string("allocating transfer memory: ") + std::strerror(error));
  }
  void* base = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, segment->fd_.get(), 0);
  if (base == MAP_FAILED) raise_errno("mmap of transfer memory", errno);
  segment->base_ = base;
  segment->size_ = rounded;
  return segment;
}

ShareableHostMemory::~ShareableHostMemory() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

}  // namespace memloom::smem::trans
