// The MemFabric common API: environment init, an in-process config store, logging, last error.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "smem/host/smem.h"
#include "src/base/launcher_detection.h"
#include "src/base/log.h"
#include "src/smem/smem_error.h"
#include "src/smem/store_tls.h"
#include "src/store/etcd_client.h"
#include "src/store/server.h"
#include "src/store/tls_config.h"
#include "src/store/url.h"

namespace {

std::mutex g_mutex;
bool g_initialized = false;
std::unique_ptr<memloom::store::Server> g_store;
thread_local std::string t_returned_message;  // keeps the returned C string alive
// A tls_info string longer than this is not a list of six paths.
constexpr uint32_t kMaxTlsInfoBytes = 64 * 1024;

// MemFabric levels: 0 debug, 1 info, 2 warn, 3 error.
memloom::log::Level from_smem_level(int level) {
  switch (level) {
    case 0:
      return memloom::log::Level::kDebug;
    case 1:
      return memloom::log::Level::kInfo;
    case 2:
      return memloom::log::Level::kWarn;
    default:
      return memloom::log::Level::kError;
  }
}

int to_smem_level(memloom::log::Level level) {
  switch (level) {
    case memloom::log::Level::kTrace:
    case memloom::log::Level::kDebug:
      return 0;
    case memloom::log::Level::kInfo:
      return 1;
    case memloom::log::Level::kWarn:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

using memloom::raise;
using memloom::Status;

extern "C" {

int32_t smem_init(uint32_t flags) {
  return memloom::smem::guarded("smem_init", [&] {
    // Reserved; MemFabric ignores them, so programs that pass any still start.
    if (flags != 0) MEMLOOM_LOG(kDebug, "smem_init: ignoring reserved flags " << flags);
    memloom::base::log_launch_once();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_initialized = true;
  });
}

int32_t smem_create_config_store(const char* storeUrl) {
  return memloom::smem::guarded("smem_create_config_store", [&] {
    MEMLOOM_CHECK_ARG(storeUrl != nullptr, "storeUrl is null");
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_store)
      raise(Status::kInvalidInput,
            "a config store already runs in this process at " + g_store->url());
    // An etcd cluster runs by itself: "creating" the store only checks that it answers.
    if (memloom::store::is_etcd_url(storeUrl)) {
      memloom::store::check_etcd_reachable(storeUrl,
                                           memloom::store::ClientOptions{}.connect_timeout);
      return;
    }
    memloom::store::ServerOptions options;
    options.listen_url = storeUrl;
    g_store = memloom::store::Server::start(options);
  });
}

int32_t smem_set_extern_logger(void (*func)(int level, const char* msg)) {
  return memloom::smem::guarded("smem_set_extern_logger", [&] {
    MEMLOOM_CHECK_ARG(func != nullptr, "the logger function is null");
    std::lock_guard<std::mutex> lock(g_mutex);
    memloom::log::set_sink([func](memloom::log::Level level, const std::string& message) {
      func(to_smem_level(level), message.c_str());
    });
  });
}

int32_t smem_set_log_level(int level) {
  return memloom::smem::guarded("smem_set_log_level", [&] {
    MEMLOOM_CHECK_ARG(level >= 0 && level <= 3,
                      "log level must be 0 (debug) .. 3 (error), got " + std::to_string(level));
    memloom::log::set_level(from_smem_level(level));
  });
}

// Process-wide: servers and clients created afterwards (smem_create_config_store, smem_*_init,
// WholeMemory communicators) use it; those already running keep what they started with.
int32_t smem_set_conf_store_tls(bool enable, const char* tls_info, const uint32_t tls_info_len) {
  return memloom::smem::guarded("smem_set_conf_store_tls", [&] {
    if (!enable) return memloom::store::set_process_tls_files(std::nullopt);
    MEMLOOM_CHECK_ARG(tls_info != nullptr && tls_info_len > 0,
                      "tls_info is empty: TLS needs at least tlsCaFile and tlsCert");
    MEMLOOM_CHECK_ARG(tls_info_len <= kMaxTlsInfoBytes,
                      "tls_info is longer than " + std::to_string(kMaxTlsInfoBytes) + " bytes");
    std::string_view text(tls_info, tls_info_len);
    // Callers may count the terminator in the length.
    while (!text.empty() && text.back() == '\0') text.remove_suffix(1);
    memloom::store::TlsFiles files = memloom::store::parse_tls_info(text);
    if (!files.package_path.empty()) {
      MEMLOOM_LOG(kInfo, "smem_set_conf_store_tls: packagePath '"
                             << files.package_path
                             << "' is not used: memloom uses the OpenSSL it was built with");
    }
    memloom::store::set_process_tls_files(std::move(files));
  });
}

int32_t smem_set_config_store_tls_key(const char* tls_pk, const uint32_t tls_pk_len,
                                      const char* tls_pk_pw, const uint32_t tls_pk_pw_len,
                                      const smem_decrypt_handler h) {
  return memloom::smem::guarded("smem_set_config_store_tls_key", [&] {
    MEMLOOM_CHECK_ARG(tls_pk != nullptr && tls_pk_len > 0,
                      "tls_pk (the private key as PEM text) is empty");
    MEMLOOM_CHECK_ARG(tls_pk_pw != nullptr || tls_pk_pw_len == 0,
                      "tls_pk_pw is null but tls_pk_pw_len is " + std::to_string(tls_pk_pw_len));
    std::string_view password =
        tls_pk_pw_len > 0 ? std::string_view(tls_pk_pw, tls_pk_pw_len) : std::string_view();
    // The key is parsed now, so a wrong password fails here and not at the first connection.
    memloom::store::set_process_tls_key(memloom::store::TlsPrivateKey::load(
        std::string_view(tls_pk, tls_pk_len), password, memloom::smem::password_decryptor(h)));
  });
}

void smem_uninit(void) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_store.reset();
  g_initialized = false;
}

const char* smem_get_last_err_msg(void) {
  t_returned_message = memloom::log::last_error();
  return t_returned_message.c_str();
}

const char* smem_get_and_clear_last_err_msg(void) {
  t_returned_message = memloom::log::take_last_error();
  return t_returned_message.c_str();
}

}  // extern "C"
