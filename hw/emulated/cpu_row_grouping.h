// The CPU runner of KernelId::kGroupRows (src/kernels/row_grouping_kernel.h): a stable grouping
// of requests by key on one thread.
#pragma once

#include "src/kernels/row_grouping_kernel.h"

namespace memloom::emulated {

void group_rows_on_cpu(const kernels::GroupRowsArgs& args);

}  // namespace memloom::emulated
