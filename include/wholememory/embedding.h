/*
 * memloom's WholeMemory embeddings (drop-in for WholeMemory's wholememory/embedding.h): a
 * WholeMemory table of learnable rows, sparse optimizers that update only the rows a batch
 * touched, and cache policies.
 *
 * Embedding tables are FLOAT, HALF or BF16; optimizer states are FLOAT tensors of the table's
 * partition. Gradients are FLOAT (as published). wholememory_embedding_gather_gradient_apply is
 * collective over the embedding's communicator: every rank's (index, gradient) pairs travel to the
 * rank owning the row; gradients of a row named more than once in one call (by one rank or by
 * several) are summed, in rank order then list order, and the optimizer takes one step for that
 * row, as WholeMemory does. Every embedding dimension is exact (no multiple of 4 or 32 needed).
 *
 * stream_int is a stream handle (see wholememory_op.h) cast to int64_t.
 *
 * The header compiles as C++ (as published) and as C99, where default arguments must be passed.
 */
#ifndef MEMLOOM_WHOLEMEMORY_EMBEDDING_H_
#define MEMLOOM_WHOLEMEMORY_EMBEDDING_H_

#include <stdint.h>
#include <wholememory/env_func_ptrs.h>
#include <wholememory/wholememory_tensor.h>

#ifdef __cplusplus
#define WHOLEMEMORY_EMBEDDING_DEFAULT_ARG(value) = value
extern "C" {
#else
#define WHOLEMEMORY_EMBEDDING_DEFAULT_ARG(value)
#endif

typedef struct wholememory_embedding_cache_policy_* wholememory_embedding_cache_policy_t;
typedef struct wholememory_embedding_optimizer_* wholememory_embedding_optimizer_t;
typedef struct wholememory_embedding_* wholememory_embedding_t;

enum wholememory_access_type_t {
  WHOLEMEMORY_AT_NONE = 0,
  WHOLEMEMORY_AT_READONLY,
  WHOLEMEMORY_AT_READWRITE,
};

enum wholememory_optimizer_type_t {
  WHOLEMEMORY_OPT_NONE = 0,
  WHOLEMEMORY_OPT_SGD,       /* parameters: weight_decay */
  WHOLEMEMORY_OPT_LAZY_ADAM, /* weight_decay, epsilon, beta1, beta2, adam_w; states m, v, beta12t */
  WHOLEMEMORY_OPT_RMSPROP,   /* weight_decay, epsilon, alpha; state v */
  WHOLEMEMORY_OPT_ADAGRAD,   /* weight_decay, epsilon; state state_sum */
};

#ifndef __cplusplus
typedef enum wholememory_access_type_t wholememory_access_type_t;
typedef enum wholememory_optimizer_type_t wholememory_optimizer_type_t;
#endif

wholememory_error_code_t wholememory_create_embedding_optimizer(
    wholememory_embedding_optimizer_t* optimizer, wholememory_optimizer_type_t optimizer_type);

/* value points to a float. An unknown name gives WHOLEMEMORY_INVALID_INPUT. */
wholememory_error_code_t wholememory_optimizer_set_parameter(
    wholememory_embedding_optimizer_t optimizer, const char* parameter_name, void* value);

void wholememory_destroy_embedding_optimizer(wholememory_embedding_optimizer_t optimizer);

/* cache_ratio in [1/512, 1]; see README's Status table for what memloom caches. */
wholememory_error_code_t wholememory_create_embedding_cache_policy(
    wholememory_embedding_cache_policy_t* cache_policy, wholememory_comm_t cache_level_comm,
    wholememory_memory_type_t memory_type, wholememory_memory_location_t memory_location,
    wholememory_access_type_t access_type, float cache_ratio);

wholememory_error_code_t wholememory_destroy_embedding_cache_policy(
    wholememory_embedding_cache_policy_t cache_policy);

/* Collective. The description's sizes and dtype are used (a matrix); strides and storage_offset
 * are ignored: rows are packed. embedding_entry_partition: world_size row counts (NULL: equal
 * plan). round_robin_size other than 0 gives WHOLEMEMORY_NOT_IMPLEMENTED. */
wholememory_error_code_t wholememory_create_embedding(
    wholememory_embedding_t* wholememory_embedding,
    wholememory_tensor_description_t* embedding_tensor_description, wholememory_comm_t comm,
    wholememory_memory_type_t memory_type, wholememory_memory_location_t memory_location,
    wholememory_embedding_cache_policy_t cache_policy,
    size_t* embedding_entry_partition WHOLEMEMORY_EMBEDDING_DEFAULT_ARG(NULL),
    int user_defined_sms WHOLEMEMORY_EMBEDDING_DEFAULT_ARG(-1),
    int round_robin_size WHOLEMEMORY_EMBEDDING_DEFAULT_ARG(0));

/* Collective. */
wholememory_error_code_t wholememory_destroy_embedding(
    wholememory_embedding_t wholememory_embedding);

/* The table (valid until the embedding is destroyed); NULL for an invalid handle. */
wholememory_tensor_t wholememory_embedding_get_embedding_tensor(
    wholememory_embedding_t wholememory_embedding);

/* Collective: creates the optimizer's states (zero; beta12t one) for this embedding. Once per
 * embedding. */
wholememory_error_code_t wholememory_embedding_set_optimizer(
    wholememory_embedding_t wholememory_embedding, wholememory_embedding_optimizer_t optimizer);

wholememory_error_code_t wholememory_embedding_gather(wholememory_embedding_t wholememory_embedding,
                                                      wholememory_tensor_t indices,
                                                      wholememory_tensor_t output,
                                                      bool adjust_cache,
                                                      wholememory_env_func_t* p_env_fns,
                                                      int64_t stream_int);

/* Collective: grads has one FLOAT row per index; see the top of this file for duplicates. */
wholememory_error_code_t wholememory_embedding_gather_gradient_apply(
    wholememory_embedding_t wholememory_embedding, wholememory_tensor_t indices,
    wholememory_tensor_t grads, bool adjust_cache, float lr, wholememory_env_func_t* p_env_fns,
    int64_t stream_int);

/* NULL-terminated; {NULL} for SGD or without an optimizer. */
const char* const* wholememory_embedding_get_optimizer_state_names(
    wholememory_embedding_t wholememory_embedding);

/* NULL when the state does not exist. */
wholememory_tensor_t wholememory_embedding_get_optimizer_state(
    wholememory_embedding_t wholememory_embedding, const char* name);

/* Collective. */
wholememory_error_code_t wholememory_embedding_writeback_cache(
    wholememory_embedding_t wholememory_embedding, int64_t stream_int);

/* Collective. */
wholememory_error_code_t wholememory_embedding_drop_all_cache(
    wholememory_embedding_t wholememory_embedding, int64_t stream_int);

#ifdef __cplusplus
}
#endif

#endif /* MEMLOOM_WHOLEMEMORY_EMBEDDING_H_ */
