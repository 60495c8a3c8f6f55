#include "src/store/job_namespaces.h"

#include <openssl/crypto.h>

#include "memloom/error.h"

namespace memloom::store {

namespace {

// Constant time in the keys' contents, so timing does not reveal how much of a guess was right.
// Their lengths are not secret: 0 or protocol::kNamespaceKeyBytes.
bool same_key(const std::string& bound, const std::string& presented) {
  return bound.size() == presented.size() &&
         CRYPTO_memcmp(bound.data(), presented.data(), bound.size()) == 0;
}

}  // namespace

void JobNamespaces::join(const std::string& job_namespace, const std::string& key) {
  auto [found, created] = namespaces_.try_emplace(job_namespace);
  Entry& entry = found->second;
  if (created) {
    entry.key = key;
  } else if (!same_key(entry.key, key)) {
    const std::string name = "job namespace '" + job_namespace + "'";
    if (entry.key.empty()) {
      raise(Status::kInvalidValue, name + " was opened by clients without a job secret; this " +
                                       "client has one (MEMLOOM_JOB_SECRET) and does not join " +
                                       "them (is another job, or an old client, using its name?)");
    }
    raise(Status::kInvalidValue,
          name + " belongs to a job with " +
              (key.empty() ? "a job secret, and this client has none: set MEMLOOM_JOB_SECRET "
                             "to the job's secret"
                           : "another job secret than this client's (MEMLOOM_JOB_SECRET)"));
  }
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
