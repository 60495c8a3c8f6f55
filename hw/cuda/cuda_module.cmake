# Builds libmemloom_cuda.so, the CUDA backend module (included from hw/CMakeLists.txt). AUTO builds it when nvcc and NCCL are found.
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include /usr/include)
# libnccl.so.2 alone (the runtime package, without the -dev symlink) is enough to link against.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
             HINTS /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)

set(_memloom_cuda_ok OFF)
if(CMAKE_CUDA_COMPILER AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(_memloom_cuda_ok ON)
endif()
if(MEMLOOM_WITH_CUDA STREQUAL "ON" AND NOT _memloom_cuda_ok)
  message(FATAL_ERROR "MEMLOOM_WITH_CUDA=ON but nvcc or NCCL was not found")
endif()

if(_memloom_cuda_ok)
  message(STATUS "memloom: building the CUDA backend module (NCCL: ${NCCL_LIBRARY})")
  # "90" alone would be sm_90 machine code plus compute_90 PTX; spelled out so the intent shows:
  # real code for every listed architecture, and PTX of the newest one that newer GPUs JIT-compile.
  set(_memloom_cuda_arches)
  foreach(arch IN LISTS MEMLOOM_CUDA_ARCHITECTURES)
    list(APPEND _memloom_cuda_arches ${arch}-real)
  endforeach()
  list(GET MEMLOOM_CUDA_ARCHITECTURES -1 _memloom_newest_arch)
  list(APPEND _memloom_cuda_arches ${_memloom_newest_arch}-virtual)
  set(CMAKE_CUDA_ARCHITECTURES ${_memloom_cuda_arches})
  enable_language(CUDA)
  # The kernel bodies are C++20 like the rest; CMake before 3.26 does not know nvcc's flag for it.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND
     CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  find_package(CUDAToolkit REQUIRED)
  file(GLOB MEMLOOM_CUDA_SOURCES CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_LIST_DIR}/*.cpp ${CMAKE_CURRENT_LIST_DIR}/*.cu)
  add_library(memloom_cuda MODULE ${MEMLOOM_CUDA_SOURCES})
  set_target_properties(memloom_cuda PROPERTIES PREFIX "lib" CUDA_SEPARABLE_COMPILATION OFF)
  target_include_directories(memloom_cuda PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include
                             ${NCCL_INCLUDE_DIR})
  # Like UCX's CUDA module, which links only ucs and uct: the layers below the backends.
  target_link_libraries(memloom_cuda PRIVATE memloom_host memloom_ucx memloom_hal memloom_kernels memloom_base
                        CUDA::cuda_driver CUDA::cudart ${NCCL_LIBRARY})
  target_compile_options(memloom_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror --Werror=all-warnings>)
  set_target_properties(memloom_cuda PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
  install(TARGETS memloom_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  set(MEMLOOM_HAVE_CUDA_MODULE ON)
else()
  message(STATUS "memloom: CUDA backend module not built (nvcc or NCCL missing)")
endif()
