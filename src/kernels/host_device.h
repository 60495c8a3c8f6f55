// MEMLOOM_HOST_DEVICE marks a function that both backends compile: nvcc builds it for the GPU
// (and the host), a plain C++ compiler sees an ordinary inline function that CPU threads run.
#pragma once

#if defined(__CUDACC__)
#define MEMLOOM_HOST_DEVICE __host__ __device__
#else
#define MEMLOOM_HOST_DEVICE
#endif
