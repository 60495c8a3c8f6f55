#include "src/base/version.h"

namespace memloom::base {

const char* version() {
  return MEMLOOM_VERSION;
}

const char* build_options() {
  return MEMLOOM_BUILD_OPTIONS;
}

std::string version_line(const std::string& tool) {
  return tool + " " + version() + " (" + build_options() + ")";
}

}  // namespace memloom::base
