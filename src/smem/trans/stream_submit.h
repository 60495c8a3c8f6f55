// Puts a transfer in a stream's order, for smem_trans_*_submit.
#pragma once

#include <functional>

#include "memloom/deadline.h"

namespace memloom::smem::trans {

// Runs `work` after the work already enqueued on `stream` and before anything enqueued later.
// Emulated backend: `stream` is a memloom hal::Stream (its native handle); `work` runs on the
// stream's thread and an exception it throws is rethrown by the stream's synchronize().
// Other backends: `stream` is theirs (a cudaStream_t); the stream is synchronized (until
// `deadline`) and `work` runs right here, because an error inside a CUDA host callback could
// never reach the caller's cudaStreamSynchronize: later work of the stream still starts after the
// transfer, and failures are returned by the submit call itself.
void submit_in_stream_order(void* stream, std::function<void()> work, Deadline deadline);

}  // namespace memloom::smem::trans
