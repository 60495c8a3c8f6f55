#include "src/core/store_bootstrap.h"

#include <algorithm>
#include <optional>

#include "memloom/error.h"
#include "src/base/wait_reporter.h"
#include "src/core/fd_broker.h"

namespace memloom::core {

void StoreBootstrap::put(const std::string& key, const std::string& value) {
  client_.set(prefix_(key), value);
}

std::string StoreBootstrap::wait_get(const std::string& key, Deadline deadline) {
  // In slices, so a peer that never publishes its part of a group's setup is reported.
  base::WaitReporter reporter(deadline);
  std::optional<std::string> value;
  while (true) {
    value = client_.get(
        prefix_(key), std::min(deadline.remaining(),
                               std::max(reporter.next_report_in(), std::chrono::milliseconds(1))));
    if (value || deadline.expired()) break;
    reporter.poll([&] { return "'" + prefix_(key) + "' in the config store (a peer's setup)"; });
  }
  if (!value)
    raise(Status::kTimeout, "timed out waiting for '" + prefix_(key) + "' in the config store");
  return *value;
}

std::string StoreBootstrap::publish_fd(int fd) {
  return FdBroker::instance().publish(fd);
}
void StoreBootstrap::withdraw_fd(const std::string& token) {
  FdBroker::instance().withdraw(token);
}
int StoreBootstrap::fetch_fd(const std::string& token, Deadline deadline) {
  return FdBroker::fetch(token, deadline);
}

}  // namespace memloom::core
