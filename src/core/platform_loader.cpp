#include "src/core/platform_loader.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>

#include "hw/emulated/emulated_platform.h"
#include "memloom/error.h"
#include "src/core/environment.h"
#include "src/core/log.h"

namespace memloom::core {
namespace {

std::mutex g_mutex;
std::unique_ptr<hal::Platform> g_platform;
void* g_cuda_module = nullptr;

// Looks beside libmemloom first (an uninstalled build tree), then the install libdir, then the
// loader's search path.
void* open_cuda_module(std::string* error) {
  Dl_info info{};
  std::string candidates[3];
  if (dladdr(reinterpret_cast<void*>(&open_cuda_module), &info) != 0 && info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    auto slash = self.rfind('/');
    if (slash != std::string::npos)
      candidates[0] = self.substr(0, slash + 1) + MEMLOOM_CUDA_MODULE_NAME;
  }
  candidates[1] = std::string(MEMLOOM_INSTALL_LIBDIR) + "/" + MEMLOOM_CUDA_MODULE_NAME;
  candidates[2] = MEMLOOM_CUDA_MODULE_NAME;
  for (const auto& path : candidates) {
    if (path.empty()) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return handle;
    *error = dlerror();
  }
  return nullptr;
}

std::unique_ptr<hal::Platform> try_cuda(bool required) {
  std::string error;
  if (g_cuda_module == nullptr) g_cuda_module = open_cuda_module(&error);
  if (g_cuda_module == nullptr) {
    if (required)
      raise(Status::kNotSupported,
            "MEMLOOM_BACKEND=cuda but the CUDA module does not load: " + error);
    MEMLOOM_LOG(kDebug, "CUDA module not loaded (" << error << "); using the emulated backend");
    return nullptr;
  }
  auto create =
      reinterpret_cast<hal::CreatePlatformFn>(dlsym(g_cuda_module, hal::kCreatePlatformSymbol));
  if (create == nullptr) raise(Status::kLogic, "the CUDA module lacks memloom_create_platform");
  try {
    return std::unique_ptr<hal::Platform>(create());
  } catch (const Error& e) {
    if (required) throw;
    MEMLOOM_LOG(kDebug,
                "CUDA backend unavailable (" << e.what() << "); using the emulated backend");
    return nullptr;
  }
}

}  // namespace

hal::Platform& platform() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_platform) return *g_platform;
  const std::string choice = Environment::read().backend;
  if (choice == "cuda") {
    g_platform = try_cuda(true);
  } else if (choice.empty()) {
    g_platform = try_cuda(false);
  } else if (choice != "emulated") {
    raise(Status::kInvalidValue, "MEMLOOM_BACKEND='" + choice + "' (expected emulated or cuda)");
  }
  if (!g_platform)
    g_platform = emulated::create_platform(emulated::EmulatedOptions::from_environment());
  MEMLOOM_LOG(kDebug, "backend: " << g_platform->name());
  return *g_platform;
}

void release_platform() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_platform.reset();
}

}  // namespace memloom::core
