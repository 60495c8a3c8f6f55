# memloom is several shared libraries and dlopen'ed backend modules whose C++ objects cross between
# them (exceptions, std::string, streams and their locales). A compiler that finds only
# libstdc++.a links a private copy of the C++ runtime into each of them, and those copies do not
# agree: seen on a GPU image whose CXX wrapper (/opt/gcc/bin/g++) had no libstdc++.so, where
# `ostringstream << pointer` in the emulated module called a null function and crashed Python.
# So configuration stops there, naming the compiler and what to use instead.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT APPLE)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                  OUTPUT_VARIABLE _memloom_libstdcxx_so OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _memloom_libstdcxx_rc)
  # Clang with libc++ (-stdlib=libc++) has no libstdc++ to find and needs no check.
  if(_memloom_libstdcxx_rc EQUAL 0 AND NOT CMAKE_CXX_FLAGS MATCHES "-stdlib=libc\\+\\+"
     AND NOT IS_ABSOLUTE "${_memloom_libstdcxx_so}")
    message(FATAL_ERROR
      "${CMAKE_CXX_COMPILER} finds no shared libstdc++ (libstdc++.so), so it would link a static "
      "copy of the C++ runtime into each of memloom's shared libraries and backend modules, which "
      "then disagree about streams, locales and exceptions and crash. Use a compiler that links "
      "libstdc++ dynamically (e.g. -DCMAKE_CXX_COMPILER=/usr/bin/g++, or install the libstdc++ "
      "development package of this compiler).")
  endif()
endif()
