/*
 * memloom's MemFabric-compatible common API (drop-in for MemFabric's smem/host/smem.h).
 * Every int32_t function returns 0 on success and a negative SMEM_* code on failure; the reason is
 * kept per thread and read with smem_get_last_err_msg().
 */
#ifndef __MEMFABRIC_SMEM_H__
#define __MEMFABRIC_SMEM_H__

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ASYNC_COPY_FLAG (1UL << (0))
#define COPY_EXTEND_FLAG (1UL << (1))
#define SMEM_WORLD_SIZE_MAX 1024

/* Error codes (memloom): 0 is success, failures are negative. */
#define SMEM_SUCCESS 0
#define SMEM_ERROR (-1)           /* an internal error */
#define SMEM_INVALID_PARAM (-2)   /* a null pointer, a bad handle, a value out of range */
#define SMEM_MALLOC_FAILED (-3)   /* out of device or host memory */
#define SMEM_NOT_INITIALIZED (-4) /* smem_*_init was not called (or uninit was) */
#define SMEM_TIMEOUT (-5)         /* a deadline passed while waiting on peers or the store */
#define SMEM_COMM_ERROR (-6)      /* a peer or the store is gone, or ranks disagreed */
#define SMEM_NOT_FOUND (-7)       /* a key, a peer or a registered region does not exist */
#define SMEM_NOT_IMPLEMENTED (-8) /* not implemented in this build (see README's status table) */
#define SMEM_NOT_SUPPORTED (-9)   /* not supported on this backend or topology */
#define SMEM_REPEAT_CALL (-10)    /* initialised twice, destroyed twice */

/* Initializes the smem running environment; flags are reserved (pass 0). */
int32_t smem_init(uint32_t flags);

/* Starts a config store server in this process at storeUrl ("tcp://IP:PORT" or
 * "tcp://[IPv6]:PORT"); it runs until smem_uninit(). */
int32_t smem_create_config_store(const char* storeUrl);

/* Sends every log line to func (level 0 debug, 1 info, 2 warn, 3 error); NULL is refused. */
int32_t smem_set_extern_logger(void (*func)(int level, const char* msg));

/* 0 debug, 1 info, 2 warn, 3 error. */
int32_t smem_set_log_level(int level);

/* Enables TLS for config store connections; tls_info is "key: value;" pairs (see README). */
int32_t smem_set_conf_store_tls(bool enable, const char* tls_info, const uint32_t tls_info_len);

#ifdef __cplusplus
typedef int (*smem_decrypt_handler)(const char* cipherText, size_t cipherTextLen, char* plainText,
                                    size_t& plainTextLen);
#else
typedef int (*smem_decrypt_handler)(const char* cipherText, size_t cipherTextLen, char* plainText,
                                    size_t* plainTextLen);
#endif

/* Sets the TLS private key (PEM text), its password and an optional password decryptor. */
int32_t smem_set_config_store_tls_key(const char* tls_pk, const uint32_t tls_pk_len,
                                      const char* tls_pk_pw, const uint32_t tls_pk_pw_len,
                                      const smem_decrypt_handler h);

/* Un-initializes the smem running environment (stops a store started by this process). */
void smem_uninit(void);

/* The last error message of the calling thread ("" when none). */
const char* smem_get_last_err_msg(void);
const char* smem_get_and_clear_last_err_msg(void);

#ifdef __cplusplus
}
#endif

#endif /* __MEMFABRIC_SMEM_H__ */
