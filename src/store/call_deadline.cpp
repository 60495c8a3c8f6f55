#include "src/store/call_deadline.h"

namespace memloom::store {
namespace {

thread_local std::optional<Deadline> current_scope;

}  // namespace

CallDeadlineScope::CallDeadlineScope(Deadline deadline) : outer_(current_scope) {
  current_scope = outer_ ? outer_->earlier(deadline) : deadline;
}

CallDeadlineScope::~CallDeadlineScope() {
  current_scope = outer_;
}

Deadline CallDeadlineScope::bound(Deadline own) {
  if (!current_scope) return own;
  const Deadline least = Deadline::after(kLeastCallTime);
  const Deadline scoped = current_scope->time_point() < least.time_point() ? least : *current_scope;
  return own.earlier(scoped);
}

}  // namespace memloom::store
