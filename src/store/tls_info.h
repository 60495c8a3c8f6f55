// The `tls_info` string of smem_set_conf_store_tls: where the config store's TLS files are.
//
//   "tlsCaPath: /etc/memloom/ca; tlsCaFile: ca.pem,ca2.pem; tlsCert: /etc/memloom/node.pem;
//    tlsCrlPath: /etc/memloom/crl; tlsCrlFile: revoked.pem; packagePath: /usr/lib"
//
// Pairs are `key: value` separated by ';'; whitespace around keys, values and list items is
// ignored, and so are empty pairs (a trailing ';'). Keys (case-sensitive):
//   tlsCaPath    directory of the CA files                                  optional
//   tlsCaFile    CA certificate files (PEM), comma-separated                required
//   tlsCert      this process's certificate (PEM; may carry its chain)     required
//   tlsCrlPath   directory of the CRL files                                 optional
//   tlsCrlFile   certificate revocation lists (PEM), comma-separated        optional
//   packagePath  where MemFabric loads OpenSSL from; memloom links the system OpenSSL, so it is
//                checked like every path and otherwise unused               optional
// A relative tlsCaFile / tlsCrlFile name is inside tlsCaPath / tlsCrlPath when that is given.
// Refused: unknown or repeated keys, a missing required key, empty values, tlsCrlPath without
// tlsCrlFile, and paths containing ';', ',', ':' or control characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memloom::store {

struct TlsFiles {
  std::vector<std::string> ca_files;   // resolved against tlsCaPath
  std::string cert_file;               // tlsCert
  std::vector<std::string> crl_files;  // resolved against tlsCrlPath; empty: no revocation check
  std::string package_path;            // packagePath, or empty

  bool operator==(const TlsFiles&) const = default;
};

// Throws memloom::Error(kInvalidInput) naming the offending key or character.
TlsFiles parse_tls_info(std::string_view text);

}  // namespace memloom::store
