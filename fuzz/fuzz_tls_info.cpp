// libFuzzer target: the tls_info parser of smem_set_conf_store_tls (src/store/tls_info.h), which
// reads a string an application passes through from its configuration.
//
// Beyond "no crash, no sanitizer report, only memloom::Error", an accepted string must give what
// the grammar promises: a certificate and at least one CA file, and paths without separators or
// control characters.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "memloom/error.h"
#include "src/store/tls_info.h"

namespace {

[[noreturn]] void broken(const char* property) {
  std::fprintf(stderr, "fuzz_tls_info: property violated: %s\n", property);
  std::abort();
}

void check_path(const std::string& path) {
  if (path.empty()) broken("an empty path");
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (c == ';' || c == ',' || c == ':' || byte < 0x20 || byte == 0x7F) {
      broken("a path with a separator or a control character");
    }
  }
  if (path.front() == ' ' || path.back() == ' ') broken("a path with surrounding spaces");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  memloom::store::TlsFiles files;
  try {
    files = memloom::store::parse_tls_info(text);
  } catch (const memloom::Error&) {
    return 0;
  }
  if (files.ca_files.empty()) broken("accepted without a CA file");
  check_path(files.cert_file);
  for (const std::string& path : files.ca_files) check_path(path);
  for (const std::string& path : files.crl_files) check_path(path);
  if (!files.package_path.empty()) check_path(files.package_path);
  // Parsing is deterministic.
  if (!(memloom::store::parse_tls_info(text) == files)) broken("two parses differ");
  return 0;
}
