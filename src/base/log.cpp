#include "src/base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace memloom::log {
namespace {

Level level_from_env() {
  const char* value = std::getenv("MEMLOOM_LOG_LEVEL");
  if (value == nullptr || *value == '\0') return Level::kWarn;
  static const char* names[] = {"trace", "debug", "info", "warn", "error", "fatal", "off"};
  for (int i = 0; i < 7; ++i) {
    if (strcasecmp(value, names[i]) == 0) return static_cast<Level>(i);
  }
  // Straight to stderr: the level (and so write()) is being set up; a typo must not pass silently.
  std::fprintf(stderr,
               "[memloom WARN pid %d] MEMLOOM_LOG_LEVEL='%s' is not a level (trace, debug, info, "
               "warn, error, fatal, off); using warn\n",
               static_cast<int>(getpid()), value);
  return Level::kWarn;
}

std::atomic<Level>& current_level() {
  static std::atomic<Level> value{level_from_env()};
  return value;
}

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::function<void(Level, const std::string&)>& sink() {
  static std::function<void(Level, const std::string&)> value;
  return value;
}

thread_local std::string t_last_error;

const char* level_name(Level l) {
  static const char* names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"};
  return names[static_cast<int>(l)];
}

}  // namespace

void set_level(Level l) {
  current_level().store(l);
}
Level level() {
  return current_level().load(std::memory_order_relaxed);
}

void set_sink(std::function<void(Level, const std::string&)> s) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  sink() = std::move(s);
}

void write(Level l, const std::string& message) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (sink()) {
    sink()(l, message);
    return;
  }
  std::fprintf(stderr, "[memloom %s pid %d] %s\n", level_name(l), static_cast<int>(getpid()),
               message.c_str());
}

void set_last_error(const std::string& message) {
  t_last_error = message;
}
std::string last_error() {
  return t_last_error;
}
std::string take_last_error() {
  std::string out;
  out.swap(t_last_error);
  return out;
}

}  // namespace memloom::log
