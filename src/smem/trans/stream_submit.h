// Puts a transfer in a stream's order, for smem_trans_*_submit.
#pragma once

#include <functional>

namespace memloom::smem::trans {

// Runs `work` after the work already enqueued on `stream` and before anything enqueued later.
// Emulated backend: `stream` is a memloom hal::Stream (its native handle); `work` runs on the
// stream's thread and an exception it throws is rethrown by the stream's synchronize().
// CUDA backend: `stream` is a cudaStream_t; the transfer moves bytes with the CPU (sockets,
// memcpy, cross-memory attach), which a CUDA host callback may not combine with CUDA calls and
// cannot report errors from, so the stream is synchronized and `work` runs right here: later work
// of the stream still starts after the transfer, and failures reach the caller directly.
void submit_in_stream_order(void* stream, std::function<void()> work);

}  // namespace memloom::smem::trans
