# Builds the installed examples against the installed memloom package:
#   cmake -S <prefix>/share/memloom/examples -B build -DCMAKE_PREFIX_PATH=<prefix>
#   cmake --build build
# Each folder holds one example: <name>/<name>.cpp plus any other .cpp files of that folder
# (gnn_training's model); the programs print how to run them.
cmake_minimum_required(VERSION 3.25)
project(memloom_examples LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(memloom REQUIRED)
file(GLOB _example_dirs LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
foreach(dir ${_example_dirs})
  get_filename_component(name ${dir} NAME)
  if(IS_DIRECTORY ${dir} AND EXISTS ${dir}/${name}.cpp)
    file(GLOB _example_sources ${dir}/*.cpp)
    add_executable(${name} ${_example_sources})
    target_link_libraries(${name} PRIVATE memloom::memloom)
  endif()
endforeach()
