// The default job namespace and job secret of a store client (client.h). Ranks of one job must
// agree on both without talking to each other, so they come from what their launcher put in the
// environment; read at each connect (not cached), so a forked child that sets its own id is seen.
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

// Launchers other than memloom-run set no such variable: their jobs stay keyless unless the user
// sets one for every process of the job.
std::string default_job_secret() {
  return env("MEMLOOM_JOB_SECRET");
}

}  // namespace memloom::store
