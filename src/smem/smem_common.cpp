// The MemFabric common API: environment init, an in-process config store, logging, last error.
#include <memory>
#include <mutex>
#include <string>

#include "smem/host/smem.h"
#include "src/core/log.h"
#include "src/smem/smem_error.h"
#include "src/store/server.h"

namespace {

std::mutex g_mutex;
bool g_initialized = false;
std::unique_ptr<memloom::store::Server> g_store;
thread_local std::string t_returned_message;  // keeps the returned C string alive

// MemFabric levels: 0 debug, 1 info, 2 warn, 3 error.
memloom::log::Level from_smem_level(int level) {
  switch (level) {
    case 0: return memloom::log::Level::kDebug;
    case 1: return memloom::log::Level::kInfo;
    case 2: return memloom::log::Level::kWarn;
    default: return memloom::log::Level::kError;
  }
}

int to_smem_level(memloom::log::Level level) {
  switch (level) {
    case memloom::log::Level::kTrace:
    case memloom::log::Level::kDebug: return 0;
    case memloom::log::Level::kInfo: return 1;
    case memloom::log::Level::kWarn: return 2;
    default: return 3;
  }
}

}  // namespace

using memloom::Status;
using memloom::raise;

extern "C" {

int32_t smem_init(uint32_t flags) {
  return memloom::smem::guarded("smem_init", [&] {
    MEMLOOM_CHECK_ARG(flags == 0, "smem_init: flags are reserved and must be 0, got " + std::to_string(flags));
    std::lock_guard<std::mutex> lock(g_mutex);
    g_initialized = true;
  });
}

int32_t smem_create_config_store(const char* storeUrl) {
  return memloom::smem::guarded("smem_create_config_store", [&] {
    MEMLOOM_CHECK_ARG(storeUrl != nullptr, "storeUrl is null");
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_store) raise(Status::kInvalidInput, "a config store already runs in this process at " + g_store->url());
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

int32_t smem_set_conf_store_tls(bool enable, const char* tls_info, const uint32_t tls_info_len) {
  return memloom::smem::guarded("smem_set_conf_store_tls", [&] {
    (void)tls_info;
    (void)tls_info_len;
    if (!enable) return;  // plain TCP is what the store speaks today
    raise(Status::kNotImplemented, "TLS for the config store is not implemented yet");
  });
}

int32_t smem_set_config_store_tls_key(const char* tls_pk, const uint32_t tls_pk_len,
                                      const char* tls_pk_pw, const uint32_t tls_pk_pw_len,
                                      const smem_decrypt_handler h) {
  return memloom::smem::guarded("smem_set_config_store_tls_key", [&] {
    (void)tls_pk, (void)tls_pk_len, (void)tls_pk_pw, (void)tls_pk_pw_len, (void)h;
    raise(Status::kNotImplemented, "TLS for the config store is not implemented yet");
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
