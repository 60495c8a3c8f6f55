// The default job namespace of a store client (client.h). Ranks of one job must agree on it
// without talking to each other, so it comes from what their launcher put in the environment;
// read at each connect (not cached), so a forked child that sets its own id is seen.
#include <cstdlib>
#include <string>

#include "src/store/client.h"

namespace memloom::store {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

std::string default_job_namespace() {
  if (std::string job = env("MEMLOOM_JOB_ID"); !job.empty()) return job;
  if (std::string job = env("SLURM_JOB_ID"); !job.empty()) {
    std::string step = env("SLURM_STEP_ID");
    return "slurm:" + job + (step.empty() ? "" : "." + step);
  }
  if (std::string job = env("PMIX_NAMESPACE"); !job.empty()) return "pmix:" + job;
  if (std::string job = env("OMPI_MCA_ess_base_jobid"); !job.empty()) return "ompi:" + job;
  if (std::string job = env("TORCHELASTIC_RUN_ID"); !job.empty()) return "torchelastic:" + job;
  return "";
}

}  // namespace memloom::store
