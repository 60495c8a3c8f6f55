#include "tests/bad_input/bad_input_table.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <mutex>

#include "smem/host/smem.h"
#include "src/base/log.h"
#include "src/core/platform_loader.h"

namespace memloom::bad_input {

MessageSource smem_messages() {
  return {[] { smem_get_and_clear_last_err_msg(); },
          [] { return std::string(smem_get_last_err_msg()); }};
}

MessageSource wholememory_messages() {
  struct Captured {
    std::mutex mutex;
    std::string last;
  };
  auto captured = std::make_shared<Captured>();
  log::set_level(log::Level::kError);
  log::set_sink([captured](log::Level level, const std::string& message) {
    if (level < log::Level::kError) return;
    std::lock_guard<std::mutex> lock(captured->mutex);
    captured->last = message;
  });
  return {[captured] {
            std::lock_guard<std::mutex> lock(captured->mutex);
            captured->last.clear();
          },
          [captured] {
            std::lock_guard<std::mutex> lock(captured->mutex);
            return captured->last;
          }};
}

int run_rows(const std::vector<Row>& rows, const MessageSource& messages) {
  for (const Row& row : rows) {
    SCOPED_TRACE(row.function + " with " + row.argument);
    messages.clear();
    const int code = row.call();
    const std::string message = messages.last();
    if (row.expected_code != kNoCode) {
      EXPECT_EQ(code, row.expected_code) << message;
    }
    EXPECT_NE(message.find(row.message), std::string::npos)
        << "message '" << message << "' lacks '" << row.message << "'";
    const std::string& reporter = row.reported_by.empty() ? row.function : row.reported_by;
    EXPECT_EQ(message.rfind(reporter + ": ", 0), 0u)
        << "message '" << message << "' does not start with the function's name";
  }
  return static_cast<int>(rows.size());
}

std::string free_store_url() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  const bool bound = fd >= 0 &&
                     ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  EXPECT_TRUE(bound) << "no free TCP port";
  return "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

std::string backend_granularity_phrase() {
  return "the " + core::platform().name() + " backend's granularity";
}

void drop_row_where_device_exceeds(std::vector<Row>& rows, const std::string& argument,
                                   uint64_t api_maximum) {
  if (core::platform().device_capacity(0) < api_maximum) return;
  for (auto row = rows.begin(); row != rows.end(); ++row) {
    if (row->argument != argument) continue;
    std::printf(
        "[bad input] %s with %s: not expressible, device 0 holds more than the API allows\n",
        row->function.c_str(), argument.c_str());
    rows.erase(row);
    return;
  }
  ADD_FAILURE() << "no row for " << argument;
}

}  // namespace memloom::bad_input
