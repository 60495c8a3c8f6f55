// Puts a transfer in a stream's order, for smem_trans_*_submit.
#pragma once

#include <functional>

#include "memloom/deadline.h"

namespace memloom::smem::trans {

// Runs `work` after the work already enqueued on `stream` and before anything enqueued later, and
// returns at once.
// Emulated backend: `stream` is a memloom hal::Stream (its native handle); `work` runs on the
// stream's thread. CUDA backend: `stream` is a cudaStream_t; the stream reaches a host callback
// that hands `work` to the stream's host-function thread (work may call CUDA, which a callback must
// not) and holds the stream until it is done.
// Either way an exception `work` throws is rethrown by the next synchronize() of a memloom stream
// over the same native stream (memloom_stream_synchronize); a plain cudaStreamSynchronize cannot
// carry it, so it is also logged. `deadline` bounds nothing here: each transfer has its own.
void submit_in_stream_order(void* stream, std::function<void()> work, Deadline deadline);

}  // namespace memloom::smem::trans
