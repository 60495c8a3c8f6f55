#include "src/store/job_namespaces.h"

namespace memloom::store {

void JobNamespaces::join(const std::string& job_namespace) {
  Entry& entry = namespaces_[job_namespace];
  ++entry.connections;
  entry.end_timer.reset();  // destroying the timer cancels a pending end
}

void JobNamespaces::leave(const std::string& job_namespace) {
  auto found = namespaces_.find(job_namespace);
  if (found == namespaces_.end() || found->second.connections == 0) return;
  if (--found->second.connections > 0) return;
  auto timer = std::make_unique<boost::asio::steady_timer>(executor_, grace_);
  timer->async_wait([this, job_namespace](const boost::system::error_code& error) {
    if (error) return;  // a connection of the job came back, or the server stops
    auto entry = namespaces_.find(job_namespace);
    if (entry == namespaces_.end() || entry->second.connections > 0) return;
    namespaces_.erase(entry);
    end_(job_namespace);
  });
  found->second.end_timer = std::move(timer);
}

}  // namespace memloom::store
