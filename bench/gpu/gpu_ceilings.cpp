// The ceilings: what plain CUDA reaches on this machine, measured in the same run as the figures
// compared with them. Each is the best of several samples timed with CUDA events.
#include <cuda_runtime_api.h>

#include <stdexcept>

#include "bench/gpu/gpu_cuda.h"
#include "bench/gpu/gpu_figures.h"

namespace memloom::bench::gpu {

Figures probe_rank(const RankInfo&) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) check_cuda(status, "cudaGetDeviceCount");
  if (count == 0) throw std::runtime_error("cudaGetDeviceCount found 0 devices");
  return {{"devices", static_cast<double>(count)}};
}

Figures ceilings_rank(const RankInfo&) {
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  Figures figures;
  try {
    use_device_with_peers(0);
    Stream stream;
    DeviceBuffer from(kD2DBytes, "the D2D source"), to(kD2DBytes, "the D2D target");
    fill_device(from.data(), 1, kD2DBytes);
    figures["d2d"] = best_event_seconds(
        stream.get(),
        [&] {
          check_cuda(cudaMemcpyAsync(to.data(), from.data(), kD2DBytes, cudaMemcpyDeviceToDevice,
                                     stream.get()),
                     "cudaMemcpyAsync D2D");
        },
        "D2D cudaMemcpy", 10, 2);
  } catch (const std::exception& error) {
    print_failure("ceiling D2D cudaMemcpy", error.what());
  }
  if (count < 2) return figures;

  try {
    use_device_with_peers(1);
    DeviceBuffer on1(kCopyBytes, "GPU 1's peer buffer");
    use_device_with_peers(0);
    DeviceBuffer on0(kCopyBytes, "GPU 0's peer buffer");
    Stream stream;  // GPU 0's: both copies are issued from GPU 0, as the figures' are
    fill_device(on0.data(), 2, kCopyBytes);
    figures["peer copy"] = best_event_seconds(
        stream.get(),
        [&] {
          check_cuda(cudaMemcpyPeerAsync(on1.data(), 1, on0.data(), 0, kCopyBytes, stream.get()),
                     "cudaMemcpyPeerAsync GPU0->GPU1");
        },
        "cudaMemcpyPeer GPU0->GPU1");
    expect_device_bytes(on1.data(), 4096, 2, "cudaMemcpyPeer GPU0->GPU1");
    figures["peer read"] = best_event_seconds(
        stream.get(),
        [&] {
          check_cuda(cudaMemcpyPeerAsync(on0.data(), 0, on1.data(), 1, kCopyBytes, stream.get()),
                     "cudaMemcpyPeerAsync GPU1->GPU0");
        },
        "cudaMemcpyPeer GPU1->GPU0");
  } catch (const std::exception& error) {
    print_failure("ceiling cudaMemcpyPeer", error.what());
  }

  // Both GPUs reading 64 MiB from the other at once: the traffic of the gathers over two GPUs,
  // where every rank reads its peer's half of the table while the peer reads its half. NVLink
  // carries the read requests of one direction beside the data of the other, so this is below
  // twice the one-way figure. Timed on GPU 0's stream, which waits for GPU 1's copy.
  try {
    use_device_with_peers(1);
    DeviceBuffer into1(kCopyBytes, "GPU 1's target"), from1(kCopyBytes, "GPU 1's source");
    Stream stream1;
    cudaEvent_t finished1 = nullptr;
    check_cuda(cudaEventCreateWithFlags(&finished1, cudaEventDisableTiming), "cudaEventCreate");
    use_device_with_peers(0);
    DeviceBuffer into0(kCopyBytes, "GPU 0's target"), from0(kCopyBytes, "GPU 0's source");
    Stream stream0;
    cudaEvent_t started = nullptr;
    check_cuda(cudaEventCreateWithFlags(&started, cudaEventDisableTiming), "cudaEventCreate");
    figures["peer read both ways"] = best_event_seconds(
        stream0.get(),
        [&] {
          check_cuda(cudaEventRecord(started, stream0.get()), "cudaEventRecord");
          check_cuda(cudaStreamWaitEvent(stream1.get(), started, 0), "cudaStreamWaitEvent");
          check_cuda(
              cudaMemcpyPeerAsync(into0.data(), 0, from1.data(), 1, kCopyBytes, stream0.get()),
              "cudaMemcpyPeerAsync GPU1->GPU0");
          check_cuda(
              cudaMemcpyPeerAsync(into1.data(), 1, from0.data(), 0, kCopyBytes, stream1.get()),
              "cudaMemcpyPeerAsync GPU0->GPU1 (on GPU 1)");
          check_cuda(cudaEventRecord(finished1, stream1.get()), "cudaEventRecord");
          check_cuda(cudaStreamWaitEvent(stream0.get(), finished1, 0), "cudaStreamWaitEvent");
        },
        "peer reads both ways");
    (void)cudaEventDestroy(started);
    (void)cudaEventDestroy(finished1);
  } catch (const std::exception& error) {
    print_failure("ceiling peer reads both ways", error.what());
  }
  return figures;
}

}  // namespace memloom::bench::gpu
