// The serving side of the transport tests that need a peer they can kill or stop: a forked
// process with its own transport (shared by transport_test.cpp and transport_interrupt_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/emulated/emulated_platform.h"
#include "hw/hal/transport.h"
#include "tests/support/multi_process.h"

namespace memloom::hal_test {

// The state letter of /proc/<pid>/stat ('T' once a SIGSTOP took effect).
inline char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// Sends SIGSTOP and waits until it took effect (it does asynchronously); false if it did not.
inline bool stop_process(pid_t pid) {
  ::kill(pid, SIGSTOP);
  for (int i = 0; i < 1000 && process_state(pid) != 'T'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return process_state(pid) == 'T';
}

// Rank 1 serves `exposed_bytes` of zeroed memory (a transport made with `transport_options`) and
// reports (pid, address, pointer) through a pipe; rank 0 uses it, then makes it disappear
// (SIGKILL) or hang (SIGSTOP).
inline void run_against_forked_peer(
    const std::function<void(pid_t, const std::string&, uint64_t)>& body,
    size_t exposed_bytes = size_t{1} << 20, const hal::TransportOptions& transport_options = {}) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::memloom::testing::MultiProcessOptions options;
  options.ranks = 2;
  options.start_store = false;
  options.timeout = std::chrono::seconds(30);
  auto results =
      ::memloom::testing::run_ranks(options, [&](const ::memloom::testing::RankContext& context) {
        if (context.rank == 1) {
          ::close(pipe_fds[0]);
          auto transport = emulated::create_transport(transport_options);
          std::vector<std::byte> memory(exposed_bytes);
          transport->expose(memory.data(), memory.size());
          std::string line = std::to_string(getpid()) + " " + transport->address() + " " +
                             std::to_string(reinterpret_cast<uint64_t>(memory.data())) + "\n";
          ASSERT_EQ(::write(pipe_fds[1], line.data(), line.size()),
                    static_cast<ssize_t>(line.size()));
          std::this_thread::sleep_for(std::chrono::seconds(25));  // until rank 0 kills it
          return;
        }
        ::close(pipe_fds[1]);
        std::string line;
        char c;
        while (::read(pipe_fds[0], &c, 1) == 1 && c != '\n') line.push_back(c);
        std::istringstream in(line);
        pid_t pid = 0;
        std::string address;
        uint64_t pointer = 0;
        in >> pid >> address >> pointer;
        ASSERT_GT(pid, 0) << "the serving rank did not report";
        body(pid, address, pointer);
        ::kill(pid, SIGKILL);
      });
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_EQ(results[0].exit_code, 0) << ::memloom::testing::describe(results);
  EXPECT_EQ(results[1].signal, SIGKILL) << ::memloom::testing::describe(results);
}

}  // namespace memloom::hal_test
