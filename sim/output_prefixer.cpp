#include "sim/output_prefixer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "memloom/deadline.h"
#include "memloom/error.h"

namespace memloom::sim {

OutputPrefixer::OutputPrefixer(std::string prefix, Sink sink, size_t max_line_bytes)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), max_line_bytes_(max_line_bytes) {
  MEMLOOM_CHECK_ARG(sink_ != nullptr, "OutputPrefixer needs a sink");
  MEMLOOM_CHECK_ARG(max_line_bytes_ > 0, "OutputPrefixer needs a positive line limit");
}

void OutputPrefixer::feed(std::string_view data) {
  while (!data.empty()) {
    size_t newline = data.find('\n');
    if (newline == std::string_view::npos) {
      // No newline yet: buffer, but cut lines that would outgrow the limit.
      while (pending_.size() + data.size() > max_line_bytes_) {
        size_t take = max_line_bytes_ - pending_.size();
        pending_.append(data.substr(0, take));
        data.remove_prefix(take);
        emit(pending_);
        pending_.clear();
      }
      pending_.append(data);
      return;
    }
    std::string_view piece = data.substr(0, newline);
    data.remove_prefix(newline + 1);
    if (pending_.empty()) {
      while (piece.size() > max_line_bytes_) {
        emit(piece.substr(0, max_line_bytes_));
        piece.remove_prefix(max_line_bytes_);
      }
      emit(piece);
    } else {
      pending_.append(piece);
      std::string_view whole = pending_;
      while (whole.size() > max_line_bytes_) {
        emit(whole.substr(0, max_line_bytes_));
        whole.remove_prefix(max_line_bytes_);
      }
      emit(whole);
      pending_.clear();
    }
  }
}

void OutputPrefixer::finish() {
  if (pending_.empty()) return;
  emit(pending_);
  pending_.clear();
}

void OutputPrefixer::emit(std::string_view body) {
  line_.clear();
  line_.append(prefix_);
  line_.append(body);
  line_.push_back('\n');
  sink_(line_);
}

bool write_fully(int fd, std::string_view data) {
  // A reader that stops reading for this long is treated as gone rather than blocking the
  // launcher's supervision forever.
  const Deadline deadline = Deadline::after(std::chrono::seconds(30));
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written > 0) {
      data.remove_prefix(static_cast<size_t>(written));
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (deadline.expired()) return false;
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, deadline.poll_timeout_ms(1000));
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace memloom::sim
