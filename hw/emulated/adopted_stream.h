// Adopting a stream of this backend by its native handle (hal::Platform::adopt_stream). An
// emulated stream's native handle is the WorkerStream itself, so adoption looks the handle up
// among the process's live streams and lends that stream out without owning it, as the CUDA
// backend wraps a cudaStream_t it does not own.
#pragma once

#include <memory>

#include "hw/hal/stream.h"

namespace memloom::emulated {

// Called by every WorkerStream's constructor and destructor with its native handle.
void register_live_stream(void* native_handle);
void forget_live_stream(void* native_handle);

// A Stream that forwards every call to the live stream `native_handle` names and never destroys
// it (the caller keeps that stream alive while the result is used). Throws kNotSupported when
// the handle names no live stream of this process: this backend cannot adopt anything else.
std::unique_ptr<hal::Stream> adopt_live_stream(void* native_handle);

}  // namespace memloom::emulated
