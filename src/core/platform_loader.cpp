#include "src/core/platform_loader.h"
#include "src/core/backend_choice.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <string>

#include "memloom/error.h"
#include "src/base/environment.h"
#include "src/base/log.h"

namespace memloom::core {
namespace {

std::mutex g_mutex;
std::unique_ptr<hal::Platform> g_platform;
std::string g_choice_reason;

struct BackendModule {
  const char* backend;  // as MEMLOOM_BACKEND names it
  const char* file;     // the shared object that implements it
  void* handle = nullptr;
};
BackendModule g_cuda{"cuda", MEMLOOM_CUDA_MODULE_NAME};
BackendModule g_emulated{"emulated", MEMLOOM_EMULATED_MODULE_NAME};

// Looks beside libmemloom first (an uninstalled build tree), then the install libdir, then the
// loader's search path. `error` gets the loader's error for the first candidate that exists: a
// module that is there but needs a missing libcuda.so.1 must be reported as that, not as the
// bare name that the search path then does not find either.
void* open_module(const char* file, std::string* error) {
  Dl_info info{};
  std::string candidates[3];
  if (dladdr(reinterpret_cast<void*>(&open_module), &info) != 0 && info.dli_fname != nullptr) {
    std::string self = info.dli_fname;
    auto slash = self.rfind('/');
    if (slash != std::string::npos) candidates[0] = self.substr(0, slash + 1) + file;
  }
  candidates[1] = std::string(MEMLOOM_INSTALL_LIBDIR) + "/" + file;
  candidates[2] = file;
  bool found_file = false;
  for (const auto& path : candidates) {
    if (path.empty()) continue;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return handle;
    const std::string why = dlerror();
    struct stat on_disk {};
    const bool exists = path.find('/') != std::string::npos && ::stat(path.c_str(), &on_disk) == 0;
    if (!found_file) *error = exists ? why : std::string(file) + " is not installed (" + why + ")";
    found_file = found_file || exists;
  }
  return nullptr;
}

// Opens `module` and creates its platform through the entry symbol every backend exports. When
// the backend was not asked for by name, a module that does not load or finds no device gives
// nullptr (the caller falls back); when it was, either is an error.
std::unique_ptr<hal::Platform> open_backend(BackendModule& module, bool required) {
  std::string error;
  if (module.handle == nullptr) module.handle = open_module(module.file, &error);
  if (module.handle == nullptr) {
    if (required) {
      raise(Status::kNotSupported, std::string("the ") + module.backend + " backend's module " +
                                       module.file + " does not load: " + error);
    }
    MEMLOOM_LOG(kDebug, module.file << " not loaded (" << error << ")");
    g_choice_reason = std::string("the ") + module.backend + " backend is unavailable: " + error;
    return nullptr;
  }
  auto create =
      reinterpret_cast<hal::CreatePlatformFn>(dlsym(module.handle, hal::kCreatePlatformSymbol));
  if (create == nullptr) {
    raise(Status::kLogic,
          std::string(module.file) + " lacks its entry point " + hal::kCreatePlatformSymbol);
  }
  try {
    return std::unique_ptr<hal::Platform>(create());
  } catch (const Error& e) {
    // Only a backend that cannot run here (no driver, no GPU) falls back. A misconfigured one
    // (MEMLOOM_DEVICE past the GPUs) must fail: falling back would run this rank on the emulated
    // backend while its peers run CUDA, and their descriptors would not match.
    if (required || e.status() != Status::kNotSupported) throw;
    MEMLOOM_LOG(kDebug, module.backend << " backend unavailable (" << e.what() << ")");
    g_choice_reason = std::string("the ") + module.backend + " backend is unavailable: " + e.what();
    return nullptr;
  }
}

}  // namespace

hal::Platform& platform() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_platform) return *g_platform;
  const std::string choice = base::Environment::read().backend;
  g_choice_reason = choice.empty() ? "" : "MEMLOOM_BACKEND=" + choice;
  if (choice == "cuda") {
    g_platform = open_backend(g_cuda, true);
  } else if (choice.empty()) {
    g_platform = open_backend(g_cuda, false);
    if (!g_platform) MEMLOOM_LOG(kDebug, "using the emulated backend");
  } else if (choice != "emulated") {
    raise(Status::kInvalidValue, "MEMLOOM_BACKEND='" + choice + "' (expected emulated or cuda)");
  }
  if (!g_platform) g_platform = open_backend(g_emulated, true);
  if (g_choice_reason.empty()) g_choice_reason = "the cuda module loaded and found a GPU";
  MEMLOOM_LOG(kDebug, "backend: " << g_platform->name());
  return *g_platform;
}

std::string backend_choice_reason() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_choice_reason;
}

void release_platform() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_platform.reset();
}

}  // namespace memloom::core
