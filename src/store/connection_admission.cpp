#include "src/store/connection_admission.h"

#include <sys/resource.h>

#include <algorithm>

namespace memloom::store {

size_t connection_cap_for_fd_limit(size_t configured, std::string* why) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    *why = "max_connections " + std::to_string(configured);
    return configured;
  }
  const size_t soft = static_cast<size_t>(limit.rlim_cur);
  // An eighth of the descriptors, at least 16 and at most 256, stay for everything but clients.
  const size_t reserve = std::clamp<size_t>(soft / 8, 16, 256);
  const size_t affordable = soft > reserve ? soft - reserve : 1;
  const size_t cap = std::max<size_t>(1, std::min(configured, affordable));
  *why = "max_connections " + std::to_string(configured) + ", RLIMIT_NOFILE soft limit " +
         std::to_string(soft) + " less " + std::to_string(reserve) + " kept in reserve";
  return cap;
}

bool ConnectionAdmission::admit(size_t open) {
  if (pending_.size() >= limits_.max_unauthenticated) {
    evict_oldest("evicted: too many connections that have not authenticated");
    return true;
  }
  if (open < limits_.max_connections) return true;
  if (pending_.empty()) return false;  // every slot is held by an authenticated client
  evict_oldest("evicted: the connection cap is reached and it has not authenticated");
  return true;
}

uint64_t ConnectionAdmission::add_unauthenticated(Clock::time_point deadline, Evict evict) {
  uint64_t ticket = next_ticket_++;
  pending_.emplace(ticket, Pending{deadline, std::move(evict)});
  return ticket;
}

void ConnectionAdmission::evict_oldest(const std::string& reason) {
  auto oldest = pending_.begin();
  Evict evict = std::move(oldest->second.evict);
  pending_.erase(oldest);
  evict(reason);
}

size_t ConnectionAdmission::evict_overdue(Clock::time_point now) {
  size_t evicted = 0;
  // Deadlines are not in ticket order when they differ per connection; the table is small (the
  // unauthenticated budget), so one pass is cheap.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    Evict evict = std::move(it->second.evict);
    it = pending_.erase(it);
    evict("did not authenticate in time");
    ++evicted;
  }
  return evicted;
}

}  // namespace memloom::store
