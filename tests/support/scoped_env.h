// Sets (or, with nullopt, unsets) environment variables for one scope and restores them after:
// tests of what the library reads from its environment (launchers, backend, defaults).
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace memloom::test {

using EnvValues = std::map<std::string, std::optional<std::string>>;

class ScopedEnv {
 public:
  explicit ScopedEnv(const EnvValues& values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
      set(name, value);
    }
  }
  ScopedEnv(const char* name, std::optional<std::string> value)
      : ScopedEnv(EnvValues{{name, value}}) {}
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) set(name, value);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace memloom::test
