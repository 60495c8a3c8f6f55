// The random helpers of wholememory/wholegraph_op.h, on the host, from the sampling kernels'
// counter-based generator (src/kernels/counter_random.h): value i of a call is keyed by
// (random_seed, subsequence, i).
#include <cmath>
#include <cstdint>

#include "memloom/error.h"
#include "src/kernels/counter_random.h"
#include "src/wholememory/embedding/stream_work.h"
#include "src/wholememory/wholememory_error.h"
#include "wholememory/wholegraph_op.h"

namespace wm = memloom::wholememory;
using memloom::kernels::counter_random;

extern "C" {

wholememory_error_code_t generate_random_positive_int_cpu(int64_t random_seed, int64_t subsequence,
                                                          wholememory_tensor_t output) {
  return wm::guarded("generate_random_positive_int_cpu", [&] {
    const auto array =
        wm::local_array(output, 1, {WHOLEMEMORY_DT_INT, WHOLEMEMORY_DT_INT64}, "output");
    for (int64_t i = 0; i < array.count; ++i) {
      const uint64_t bits =
          counter_random(static_cast<uint64_t>(random_seed), static_cast<uint64_t>(subsequence),
                         static_cast<uint64_t>(i));
      if (array.dtype == WHOLEMEMORY_DT_INT) {
        static_cast<int32_t*>(array.data)[i] = static_cast<int32_t>(bits >> 33);
      } else {
        static_cast<int64_t*>(array.data)[i] = static_cast<int64_t>(bits >> 1);
      }
    }
  });
}

wholememory_error_code_t generate_exponential_distribution_negative_float_cpu(
    int64_t random_seed, int64_t subsequence, wholememory_tensor_t output) {
  return wm::guarded("generate_exponential_distribution_negative_float_cpu", [&] {
    const auto array = wm::local_array(output, 1, {WHOLEMEMORY_DT_FLOAT}, "output");
    for (int64_t i = 0; i < array.count; ++i) {
      const uint64_t bits =
          counter_random(static_cast<uint64_t>(random_seed), static_cast<uint64_t>(subsequence),
                         static_cast<uint64_t>(i));
      static_cast<float*>(array.data)[i] =
          static_cast<float>(std::log(memloom::kernels::uniform_open_closed(bits)));
    }
  });
}

}  // extern "C"
