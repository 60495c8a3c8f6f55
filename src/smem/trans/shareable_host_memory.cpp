#include "src/smem/trans/shareable_host_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "memloom/error.h"

namespace memloom::smem::trans {

std::unique_ptr<ShareableHostMemory> ShareableHostMemory::allocate(size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes == 0 || bytes > SIZE_MAX - page || bytes > static_cast<size_t>(INT64_MAX)) {
    raise(Status::kOutOfMemory,
          "cannot reserve " + std::to_string(bytes) + " bytes of transfer memory");
  }
  std::unique_ptr<ShareableHostMemory> segment(new ShareableHostMemory());
  segment->fd_.reset(::memfd_create("memloom-trans-malloc", MFD_CLOEXEC));
  if (!segment->fd_.valid()) raise_errno("memfd_create", errno);
  const size_t rounded = (bytes + page - 1) / page * page;
  auto out_of_memory = [&](const char* step, int error) {
    raise(Status::kOutOfMemory, "cannot reserve " + std::to_string(bytes) +
                                    " bytes of transfer memory (" + step +
                                    "): " + std::strerror(error));
  };
  if (::ftruncate(segment->fd_.get(), static_cast<off_t>(rounded)) != 0) {
    const int error = errno;
    if (error == EFBIG || error == EINVAL || error == ENOSPC || error == ENOMEM) {
      out_of_memory("ftruncate", error);
    }
    raise_errno("sizing transfer memory", error);
  }
  void* base = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                      segment->fd_.get(), 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    if (error == ENOMEM) out_of_memory("mmap", error);
    raise_errno("mmap of transfer memory", error);
  }
  segment->base_ = base;
  segment->size_ = rounded;
  return segment;
}

ShareableHostMemory::~ShareableHostMemory() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

}  // namespace memloom::smem::trans
