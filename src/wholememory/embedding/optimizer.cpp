#include "src/wholememory/embedding/optimizer.h"

#include "memloom/error.h"

namespace memloom::wholememory {
namespace {

const char* const kNoStates[] = {nullptr};
const char* const kAdamStates[] = {"m", "v", "beta12t", nullptr};
const char* const kRmsPropStates[] = {"v", nullptr};
const char* const kAdaGradStates[] = {"state_sum", nullptr};

}  // namespace

// Defaults are WholeMemory's.
Optimizer::Optimizer(wholememory_optimizer_type_t type) : type_(type) {
  switch (type) {
    case WHOLEMEMORY_OPT_SGD:
      parameters_ = {{"weight_decay", 0.0F}};
      break;
    case WHOLEMEMORY_OPT_LAZY_ADAM:
      parameters_ = {{"weight_decay", 0.0F},
                     {"epsilon", 1e-8F},
                     {"beta1", 0.9F},
                     {"beta2", 0.999F},
                     {"adam_w", 0.0F}};
      states_ = {{"m", true, 0.0F}, {"v", true, 0.0F}, {"beta12t", false, 1.0F}};
      break;
    case WHOLEMEMORY_OPT_RMSPROP:
      parameters_ = {{"weight_decay", 0.0F}, {"epsilon", 1e-8F}, {"alpha", 0.99F}};
      states_ = {{"v", true, 0.0F}};
      break;
    case WHOLEMEMORY_OPT_ADAGRAD:
      parameters_ = {{"weight_decay", 0.0F}, {"epsilon", 1e-8F}};
      states_ = {{"state_sum", true, 0.0F}};
      break;
    default:
      raise(Status::kNotImplemented,
            "optimizer type " + std::to_string(static_cast<int>(type)) + " is not an optimizer");
  }
}

const char* Optimizer::name() const {
  switch (type_) {
    case WHOLEMEMORY_OPT_SGD:
      return "SGD";
    case WHOLEMEMORY_OPT_LAZY_ADAM:
      return "LazyAdam";
    case WHOLEMEMORY_OPT_RMSPROP:
      return "RMSProp";
    default:
      return "AdaGrad";
  }
}

void Optimizer::set_parameter(const std::string& name, float value) {
  const auto found = parameters_.find(name);
  MEMLOOM_CHECK_ARG(found != parameters_.end(),
                    "parameter name " + name + " is not valid for optimizer " + this->name());
  found->second = value;
}

float Optimizer::parameter(const std::string& name) const {
  return parameters_.at(name);
}

const char* const* Optimizer::state_names() const {
  switch (type_) {
    case WHOLEMEMORY_OPT_LAZY_ADAM:
      return kAdamStates;
    case WHOLEMEMORY_OPT_RMSPROP:
      return kRmsPropStates;
    case WHOLEMEMORY_OPT_ADAGRAD:
      return kAdaGradStates;
    default:
      return kNoStates;
  }
}

kernels::OptimizerApplyArgs Optimizer::kernel_args(float lr) const {
  kernels::OptimizerApplyArgs args{};
  args.lr = lr;
  args.weight_decay = parameter("weight_decay");
  switch (type_) {
    case WHOLEMEMORY_OPT_SGD:
      args.kind = kernels::OptimizerKind::kSgd;
      break;
    case WHOLEMEMORY_OPT_LAZY_ADAM:
      args.kind = kernels::OptimizerKind::kLazyAdam;
      args.epsilon = parameter("epsilon");
      args.beta1 = parameter("beta1");
      args.beta2 = parameter("beta2");
      args.adam_w = parameter("adam_w") > 0.5F ? 1 : 0;  // a float flag, as WholeMemory's
      break;
    case WHOLEMEMORY_OPT_RMSPROP:
      args.kind = kernels::OptimizerKind::kRmsProp;
      args.epsilon = parameter("epsilon");
      args.alpha = parameter("alpha");
      break;
    default:
      args.kind = kernels::OptimizerKind::kAdaGrad;
      args.epsilon = parameter("epsilon");
  }
  return args;
}

}  // namespace memloom::wholememory
