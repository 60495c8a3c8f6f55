// Logging shared by every layer: a level, an optional sink (smem_set_extern_logger), and a
// per-thread "last error" that the C facades expose (smem_get_last_err_msg).
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace memloom::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kFatal, kOff };

void set_level(Level level);
Level level();
// The sink receives (level, message); nullptr restores the default (stderr).
void set_sink(std::function<void(Level, const std::string&)> sink);
void write(Level level, const std::string& message);
inline bool enabled(Level l) {
  return l >= level();
}

// The last error message of this thread (set by the C facade wrapper on every failure).
void set_last_error(const std::string& message);
std::string last_error();
std::string take_last_error();

}  // namespace memloom::log

#define MEMLOOM_LOG(LEVEL, EXPR)                                                      \
  do {                                                                                \
    if (::memloom::log::enabled(::memloom::log::Level::LEVEL)) {                      \
      std::ostringstream memloom_log_stream_;                                         \
      memloom_log_stream_ << EXPR;                                                    \
      ::memloom::log::write(::memloom::log::Level::LEVEL, memloom_log_stream_.str()); \
    }                                                                                 \
  } while (0)
