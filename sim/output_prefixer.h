// Turns the byte stream of one rank's stdout (or stderr) into whole lines, each prefixed with
// "[rank R] ". A partial line stays buffered until its newline arrives or the stream ends, and
// each line is handed to the sink in one piece: because the launcher is the only writer of its
// own stdout/stderr and writes one line at a time, lines of different ranks never interleave.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace memloom::sim {

class OutputPrefixer {
 public:
  using Sink = std::function<void(std::string_view line)>;  // a whole line, newline included

  // A line longer than max_line_bytes (without its newline) is emitted in pieces of that size,
  // each ended by a newline: the launcher must not buffer an endless line without limit.
  OutputPrefixer(std::string prefix, Sink sink, size_t max_line_bytes = 1u << 20);

  // Emits every line completed by `data`; keeps the rest.
  void feed(std::string_view data);
  // Emits the buffered partial line, if any, with a newline added (the stream ended).
  void finish();

  bool has_partial_line() const { return !pending_.empty(); }

 private:
  void emit(std::string_view body);

  std::string prefix_;
  Sink sink_;
  size_t max_line_bytes_;
  std::string pending_;  // bytes of the current line, without the prefix
  std::string line_;     // scratch: prefix + body + newline, reused to avoid allocations
};

// Writes all of `data` to fd, retrying on EINTR and partial writes and waiting (bounded) while a
// non-blocking fd is full. Returns false when the reader is gone (EPIPE) or the fd is broken:
// losing output must not stop the launcher from supervising and cleaning up.
bool write_fully(int fd, std::string_view data);

}  // namespace memloom::sim
