/* Compiled as C: the embedding and graph headers must be usable from C programs (default
 * arguments passed explicitly). Called by EmbeddingErrors.HeadersCompileAsC. */
#include <stddef.h>
#include <wholememory/embedding.h>
#include <wholememory/graph_op.h>
#include <wholememory/wholegraph_op.h>

int embedding_c_header_check(void) {
  wholememory_embedding_optimizer_t optimizer = 0;
  wholememory_embedding_t embedding = 0;
  wholememory_tensor_t tensor = 0;
  float value = 1.0f;
  if (wholememory_create_embedding_optimizer(&optimizer, WHOLEMEMORY_OPT_SGD) !=
      WHOLEMEMORY_SUCCESS)
    return 1;
  if (wholememory_optimizer_set_parameter(optimizer, "weight_decay", &value) != WHOLEMEMORY_SUCCESS)
    return 2;
  if (wholememory_optimizer_set_parameter(optimizer, "beta1", &value) != WHOLEMEMORY_INVALID_INPUT)
    return 3;
  wholememory_destroy_embedding_optimizer(optimizer);
  if (wholememory_embedding_get_embedding_tensor(embedding) != 0) return 4;
  if (wholememory_embedding_gather(embedding, tensor, tensor, false, 0, 0) !=
      WHOLEMEMORY_INVALID_INPUT)
    return 5;
  if (csr_add_self_loop(tensor, tensor, tensor, tensor, 0) != WHOLEMEMORY_INVALID_INPUT) return 6;
  if (generate_random_positive_int_cpu(1, 2, tensor) != WHOLEMEMORY_INVALID_INPUT) return 7;
  return 0;
}
