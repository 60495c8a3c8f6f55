# UCX (https://openucx.org): the transport between nodes (hw/host/ucx_*).
# Required, so that every build carries it and CI tests it. Found through pkg-config's `ucx`, else
# by its header and libraries (HPC-X and other installs under UCX_ROOT / MEMLOOM_DEPS_ROOT). Needs
# UCP API >= 1.13.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(UCX_PC QUIET ucx)
endif()
find_path(UCX_INCLUDE_DIR ucp/api/ucp.h
          HINTS ${UCX_PC_INCLUDE_DIRS} $ENV{UCX_ROOT}/include ${MEMLOOM_DEPS_ROOT}/usr/include)
foreach(_ucx_lib ucp uct ucs)
  # Shared libraries only (libucs.a is not position-independent and cannot go into a shared
  # memloom library); libucp.so.0 alone (a runtime package without the -dev symlink, as on GPU
  # images that carry only Debian's headers) is enough to link against.
  find_library(UCX_${_ucx_lib}_LIBRARY NAMES lib${_ucx_lib}.so lib${_ucx_lib}.so.0
               HINTS ${UCX_PC_LIBRARY_DIRS} $ENV{UCX_ROOT}/lib
                     ${MEMLOOM_DEPS_ROOT}/usr/lib/x86_64-linux-gnu)
endforeach()
if(NOT UCX_INCLUDE_DIR OR NOT UCX_ucp_LIBRARY OR NOT UCX_ucs_LIBRARY)
  message(FATAL_ERROR "memloom needs UCX >= 1.13 (Debian/Ubuntu: apt-get install libucx-dev; "
                      "or set UCX_ROOT to an install such as HPC-X)")
endif()
file(STRINGS ${UCX_INCLUDE_DIR}/ucp/api/ucp_version.h _ucx_version_lines
     REGEX "#define UCP_API_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*UCP_API_MAJOR +([0-9]+).*" "\\1" UCX_API_MAJOR "${_ucx_version_lines}")
string(REGEX REPLACE ".*UCP_API_MINOR +([0-9]+).*" "\\1" UCX_API_MINOR "${_ucx_version_lines}")
if("${UCX_API_MAJOR}.${UCX_API_MINOR}" VERSION_LESS 1.13)
  message(FATAL_ERROR "memloom needs UCX >= 1.13; found ${UCX_API_MAJOR}.${UCX_API_MINOR} "
                      "in ${UCX_INCLUDE_DIR}")
endif()
message(STATUS "memloom: UCX ${UCX_API_MAJOR}.${UCX_API_MINOR} (${UCX_ucp_LIBRARY})")
add_library(memloom_ucx INTERFACE)
target_include_directories(memloom_ucx SYSTEM INTERFACE ${UCX_INCLUDE_DIR})
target_link_libraries(memloom_ucx INTERFACE ${UCX_ucp_LIBRARY} ${UCX_ucs_LIBRARY})
