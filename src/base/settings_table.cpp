#include "src/base/settings_table.h"

namespace memloom::base {

const std::vector<Setting>& memloom_settings() {
  static const std::vector<Setting> settings = {
      {"MEMLOOM_BACKEND", "cuda when the module loads and a GPU is visible, else emulated"},
      {"MEMLOOM_LOG_LEVEL", "warn"},
      {"MEMLOOM_TIMEOUT_S", "120"},
      {"MEMLOOM_RANK", "from the launcher (see memloom/launch.h)"},
      {"MEMLOOM_WORLD_SIZE", "from the launcher"},
      {"MEMLOOM_LOCAL_RANK", "from the launcher"},
      {"MEMLOOM_LOCAL_SIZE", "from the launcher"},
      {"MEMLOOM_DEVICE", "the local rank spread over the node's devices"},
      {"MEMLOOM_NODE", "hostname + boot id"},
      {"MEMLOOM_STORE_URL", "from the launcher, else embedded in rank 0"},
      {"MEMLOOM_STORE_PREFIX", "with an etcd store: the job namespace"},
      {"MEMLOOM_STORE_PORT", "MASTER_PORT + 1, else derived from the job id"},
      {"MEMLOOM_HOST_ADDR", "127.0.0.1"},
      {"MEMLOOM_JOB_ID", "the launcher's job id"},
      {"MEMLOOM_JOB_SECRET", "unset: the namespace is only named"},
      {"MEMLOOM_RUNTIME_DIR", "set by memloom-run"},
      {"MEMLOOM_EMU_DEVICES", "8"},
      {"MEMLOOM_EMU_DEVICE_MEM", "16G"},
      {"MEMLOOM_EMU_GRANULARITY", "4K"},
      {"MEMLOOM_EMU_CPU_THREADS", "0 (the hardware threads)"},
      {"MEMLOOM_EMU_START_DELAY_MS", "0"},
      {"MEMLOOM_EMU_COLL_CHUNK", "256K"},
      {"MEMLOOM_EMU_BARRIER_SPIN_US", "1000 (0 when ranks outnumber cores)"},
      {"MEMLOOM_EMU_BARRIER_YIELD_US", "1000"},
      {"MEMLOOM_CUDA_PHASE_TIMES", "unset: off"},
      {"MEMLOOM_TRANSPORT", "no longer read (warns when set)"},
      {"MEMLOOM_UCX_DATA_PATH", "auto: rma where UCX has an RDMA transport, else am"},
      {"MEMLOOM_TRANS_STAGING", "0 (stage only memory a host thread cannot touch)"},
      {"MEMLOOM_STORE_MAX_VALUE_BYTES", "64M (memloom-store)"},
      {"MEMLOOM_STORE_MAX_TOTAL_BYTES", "1G (memloom-store)"},
  };
  return settings;
}

}  // namespace memloom::base
