/*
 * Interrupting a call that waits on a peer, from the thread that made it, without a second thread.
 *
 * A caller installs a check on its own thread around a call into memloom. While that call waits on
 * a peer on this thread (a TRANS read or write, a BM copy to another node, through the TCP or UCX
 * transport), memloom asks the check at least every 100 ms. When the check returns nonzero, the
 * call stops waiting, closes the connection it was using (the next call to that peer connects
 * again) and fails with its API's "interrupted" code: SMEM_INTERRUPTED for smem_*,
 * MEMLOOM_STATUS_INTERRUPTED for memloom_*, WHOLEMEMORY_SYSTEM_ERROR for wholememory_* (which has
 * no code of its own for it). Bytes of an interrupted transfer may or may not have reached the
 * peer.
 *
 * The Python packages install a check that runs Python's signal handlers, so that Ctrl-C raises
 * KeyboardInterrupt within a fraction of a second; a C program can install one that looks at a
 * flag its SIGINT handler sets.
 *
 * The check runs on the calling thread, inside memloom, with no memloom lock held by that thread
 * that another of its calls needs; it must not call memloom. Waits on memloom's own threads never
 * ask it. Installing costs two thread-local stores: it may be done around every call.
 */
#ifndef MEMLOOM_INTERRUPT_H_
#define MEMLOOM_INTERRUPT_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Returns nonzero when the call should stop. */
typedef int (*memloom_interrupt_check_t)(void* context);

/* Installs `check` (called with `context`) for calls made on this thread from now on, replacing
 * the one installed before; NULL removes it. */
void memloom_interrupt_check_set(memloom_interrupt_check_t check, void* context);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_INTERRUPT_H_ */
