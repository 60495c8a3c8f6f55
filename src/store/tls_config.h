// TLS for the config store: what a server or client needs to speak mutual TLS 1.3, the
// process-wide setting MemFabric's calls configure (smem_set_conf_store_tls,
// smem_set_config_store_tls_key), and how ServerOptions / ClientOptions choose between them.
#pragma once

#include <memory>
#include <optional>

#include "src/store/tls_info.h"
#include "src/store/tls_private_key.h"

namespace memloom::store {

// Both sides present `files.cert_file` with `key` and accept only a peer whose certificate chains
// to one of `files.ca_files` and is not revoked by `files.crl_files`.
struct TlsConfig {
  TlsFiles files;
  std::shared_ptr<const TlsPrivateKey> key;
};

// The TLS choice of one server or client.
class TlsSetting {
 public:
  // Follows the process-wide setting as it is when the server starts or the client connects.
  TlsSetting() = default;
  // Plain TCP, whatever the process-wide setting.
  static TlsSetting plain() { return use(nullptr); }
  // This configuration (nullptr: plain TCP).
  static TlsSetting use(std::shared_ptr<const TlsConfig> config) {
    TlsSetting setting;
    setting.follow_process_ = false;
    setting.config_ = std::move(config);
    return setting;
  }
  // The configuration to use, nullptr for plain TCP. Throws memloom::Error(kInvalidInput) when
  // it follows a process-wide TLS that is enabled but has no private key yet.
  std::shared_ptr<const TlsConfig> resolve() const;

 private:
  bool follow_process_ = true;
  std::shared_ptr<const TlsConfig> config_;
};

// The process-wide setting: set it before starting servers or connecting clients; those already
// running keep the setting they started with. Thread-safe.
// nullopt turns TLS off (the default); the files and the key can be set in either order.
void set_process_tls_files(std::optional<TlsFiles> files);
void set_process_tls_key(std::shared_ptr<const TlsPrivateKey> key);
// nullptr when TLS is off. Throws memloom::Error(kInvalidInput) when TLS is on but no key is set.
std::shared_ptr<const TlsConfig> process_tls_config();

}  // namespace memloom::store
