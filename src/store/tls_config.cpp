#include "src/store/tls_config.h"

#include <mutex>

#include "memloom/error.h"

namespace memloom::store {
namespace {

struct ProcessTls {
  std::mutex mutex;
  std::optional<TlsFiles> files;
  std::shared_ptr<const TlsPrivateKey> key;
};

ProcessTls& process_tls() {
  static ProcessTls* tls = new ProcessTls();  // never destroyed: safe to use from exit handlers
  return *tls;
}

}  // namespace

std::shared_ptr<const TlsConfig> TlsSetting::resolve() const {
  return follow_process_ ? process_tls_config() : config_;
}

void set_process_tls_files(std::optional<TlsFiles> files) {
  ProcessTls& tls = process_tls();
  std::lock_guard<std::mutex> lock(tls.mutex);
  tls.files = std::move(files);
}

void set_process_tls_key(std::shared_ptr<const TlsPrivateKey> key) {
  ProcessTls& tls = process_tls();
  std::lock_guard<std::mutex> lock(tls.mutex);
  tls.key = std::move(key);
}

std::shared_ptr<const TlsConfig> process_tls_config() {
  ProcessTls& tls = process_tls();
  std::lock_guard<std::mutex> lock(tls.mutex);
  if (!tls.files) return nullptr;
  if (!tls.key) {
    raise(Status::kInvalidInput,
          "TLS is enabled for the config store but no private key was set "
          "(smem_set_config_store_tls_key)");
  }
  return std::make_shared<const TlsConfig>(TlsConfig{*tls.files, tls.key});
}

}  // namespace memloom::store
