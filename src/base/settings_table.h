// Every MEMLOOM_* setting the library and its tools read, with its default as users see it:
// memloom-info prints them with the value in effect, and ci/check_env_docs.py checks that this
// table and README's Environment table name every variable the code reads.
#pragma once

#include <vector>

namespace memloom::base {

struct Setting {
  const char* name;
  const char* default_value;  // as README words it
};

const std::vector<Setting>& memloom_settings();

}  // namespace memloom::base
