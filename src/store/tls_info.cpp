#include "src/store/tls_info.h"

#include <array>
#include <map>
#include <optional>

#include "memloom/error.h"

namespace memloom::store {
namespace {

constexpr std::array<std::string_view, 6> kKeys = {"tlsCaPath",  "tlsCaFile",  "tlsCert",
                                                   "tlsCrlPath", "tlsCrlFile", "packagePath"};

[[noreturn]] void refuse(const std::string& why) {
  raise(Status::kInvalidInput, "tls_info: " + why);
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// Control characters (NUL, newline inside a path...) would let a path mean something other than
// what a log line shows; ',' and ':' would be ambiguous with the list and pair separators.
void check_path(std::string_view key, std::string_view path) {
  if (path.empty()) refuse(std::string(key) + " has an empty path");
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (c == ',' || c == ':' || c == ';') {
      refuse(std::string(key) + " path '" + std::string(path) + "' contains '" + c + "'");
    }
    if (byte < 0x20 || byte == 0x7F) {
      refuse(std::string(key) + " path contains the control character 0x" +
             "0123456789abcdef"[byte >> 4] + "0123456789abcdef"[byte & 15]);
    }
  }
}

std::string join(std::string_view directory, std::string_view name) {
  if (directory.empty() || name.front() == '/') return std::string(name);
  std::string path(directory);
  if (path.back() != '/') path.push_back('/');
  return path + std::string(name);
}

// "a.pem, b.pem" -> the resolved paths; empty items are refused ("a.pem,,b.pem").
std::vector<std::string> split_list(std::string_view key, std::string_view value,
                                    std::string_view directory) {
  std::vector<std::string> paths;
  while (true) {
    size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    if (item.empty()) refuse(std::string(key) + " has an empty item");
    check_path(key, item);
    paths.push_back(join(directory, item));
    if (comma == std::string_view::npos) return paths;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

TlsFiles parse_tls_info(std::string_view text) {
  std::map<std::string_view, std::string_view> values;
  while (!text.empty()) {
    size_t end = text.find(';');
    std::string_view pair = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (pair.empty()) continue;

    size_t colon = pair.find(':');
    if (colon == std::string_view::npos) {
      refuse("'" + std::string(pair) + "' is not a 'key: value' pair");
    }
    std::string_view key = trim(pair.substr(0, colon));
    std::string_view value = trim(pair.substr(colon + 1));
    bool known = false;
    for (std::string_view candidate : kKeys) known = known || candidate == key;
    if (!known) {
      refuse("unknown key '" + std::string(key) +
             "' (known: tlsCaPath, tlsCaFile, tlsCert, tlsCrlPath, tlsCrlFile, packagePath)");
    }
    if (value.empty()) refuse(std::string(key) + " has an empty value");
    if (!values.emplace(key, value).second) refuse(std::string(key) + " is given twice");
  }

  auto get = [&](std::string_view key) -> std::optional<std::string_view> {
    auto found = values.find(key);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
  auto ca_path = get("tlsCaPath");
  auto ca_file = get("tlsCaFile");
  auto cert = get("tlsCert");
  auto crl_path = get("tlsCrlPath");
  auto crl_file = get("tlsCrlFile");
  auto package = get("packagePath");

  if (!cert) refuse("tlsCert (this process's certificate) is required");
  if (!ca_file) refuse("tlsCaFile (the CA certificates, comma-separated) is required");
  if (crl_path && !crl_file) {
    refuse("tlsCrlPath is given without tlsCrlFile (the CRL files inside it)");
  }
  TlsFiles files;
  if (ca_path) check_path("tlsCaPath", *ca_path);
  files.ca_files = split_list("tlsCaFile", *ca_file, ca_path.value_or(""));
  check_path("tlsCert", *cert);
  files.cert_file = std::string(*cert);
  if (crl_path) check_path("tlsCrlPath", *crl_path);
  if (crl_file) files.crl_files = split_list("tlsCrlFile", *crl_file, crl_path.value_or(""));
  if (package) {
    check_path("packagePath", *package);
    files.package_path = std::string(*package);
  }
  return files;
}

}  // namespace memloom::store
