/*
 * memloom streams: ordered asynchronous work on the current device of the backend in use, for
 * programs that run on either backend (for example to pass to wholememory_gather, or to move bulk
 * data into a peer's symmetric slot with memloom_memcpy_async).
 *
 * A memloom_stream_t is the backend's native stream: a cudaStream_t on the CUDA backend (so it
 * can be passed to CUDA as well), an opaque handle on the emulated one. Functions return
 * MEMLOOM_STATUS_SUCCESS or an error status; the reason is logged.
 */
#ifndef MEMLOOM_STREAM_H_
#define MEMLOOM_STREAM_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void* memloom_stream_t;

/* Numbered as memloom::Status (memloom/error.h). */
enum memloom_status_t {
  MEMLOOM_STATUS_SUCCESS = 0,
  MEMLOOM_STATUS_INVALID_INPUT,
  MEMLOOM_STATUS_INVALID_VALUE,
  MEMLOOM_STATUS_OUT_OF_MEMORY,
  MEMLOOM_STATUS_COMMUNICATION,
  MEMLOOM_STATUS_TIMEOUT,
  MEMLOOM_STATUS_NOT_FOUND,
  MEMLOOM_STATUS_NOT_IMPLEMENTED,
  MEMLOOM_STATUS_NOT_SUPPORTED,
  MEMLOOM_STATUS_SYSTEM,
  MEMLOOM_STATUS_LOGIC,
  MEMLOOM_STATUS_DEVICE,
  MEMLOOM_STATUS_INTERRUPTED, /* memloom/interrupt.h */
};
#ifndef __cplusplus
typedef enum memloom_status_t memloom_status_t;
#endif

/* A new stream on the current device. */
memloom_status_t memloom_stream_create(memloom_stream_t* stream);
/* Waits (bounded) for the stream's work, then destroys it. */
memloom_status_t memloom_stream_destroy(memloom_stream_t stream);
/* Waits until the work enqueued so far has finished (at most MEMLOOM_TIMEOUT_S, then
 * MEMLOOM_STATUS_TIMEOUT). Returns the first error that work raised since the last call, such as
 * an index past a table in wholememory_gather. NULL is the default stream; on the CUDA backend any
 * cudaStream_t is accepted. */
memloom_status_t memloom_stream_synchronize(memloom_stream_t stream);

/* Enqueues a copy of `bytes` bytes from `src` to `dst` on `stream` and returns; the device's copy
 * engine moves them: cudaMemcpyAsync (cudaMemcpyDefault) on the CUDA backend, the stream's worker
 * thread with a helper thread for large copies on the emulated one. Either side may be any memory
 * the backend's device can address: device memory, symmetric slots and BM ranges mapped in this
 * process through their GVA (a same-node peer's slot included), or host memory.
 *
 * The copy runs after the work enqueued on the stream before it and before the work enqueued
 * after it. The caller must keep both ranges valid and must neither write `src` nor touch `dst`
 * until the copy has completed, which memloom_stream_synchronize(stream) returning
 * MEMLOOM_STATUS_SUCCESS shows; a copy that fails while it runs is reported by that call. The
 * ranges must not overlap (as with cudaMemcpyAsync, the result is then undefined).
 *
 * NULL is the default stream; on the CUDA backend any cudaStream_t is accepted. bytes == 0
 * returns MEMLOOM_STATUS_SUCCESS at once and enqueues nothing. A null dst or src with bytes > 0
 * returns MEMLOOM_STATUS_INVALID_INPUT, as does, on the emulated backend, a handle that is neither
 * NULL nor a stream of memloom_stream_create. Addresses are not checked beyond that: the CUDA
 * backend reports an address CUDA refuses as MEMLOOM_STATUS_DEVICE with CUDA's reason (from this
 * call or from memloom_stream_synchronize); on the emulated backend an unmapped address faults as
 * memcpy would. */
memloom_status_t memloom_memcpy_async(void* dst, const void* src, size_t bytes,
                                      memloom_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_STREAM_H_ */
