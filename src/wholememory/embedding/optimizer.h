// A sparse optimizer of WholeMemory embeddings (wholememory/embedding.h): its type, its parameters
// under WholeMemory's names, and the states it keeps per embedding row.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/kernels/optimizer_kernel.h"
#include "wholememory/embedding.h"

namespace memloom::wholememory {

struct OptimizerStateSpec {
  const char* name;
  bool per_element;  // columns = the embedding's dimension; else 2 (Adam's beta1^t, beta2^t)
  float initial;
};

class Optimizer {
 public:
  // kNotImplemented for WHOLEMEMORY_OPT_NONE or a value outside the enum.
  explicit Optimizer(wholememory_optimizer_type_t type);

  wholememory_optimizer_type_t type() const { return type_; }
  const char* name() const;
  // kInvalidInput for a name this optimizer does not have.
  void set_parameter(const std::string& name, float value);
  float parameter(const std::string& name) const;
  // NULL-terminated, as wholememory_embedding_get_optimizer_state_names returns them.
  const char* const* state_names() const;
  const std::vector<OptimizerStateSpec>& states() const { return states_; }
  // The kernel's arguments with this optimizer's kind and parameters filled in.
  kernels::OptimizerApplyArgs kernel_args(float lr) const;

 private:
  wholememory_optimizer_type_t type_;
  std::map<std::string, float> parameters_;
  std::vector<OptimizerStateSpec> states_;
};

}  // namespace memloom::wholememory
