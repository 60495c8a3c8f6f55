/*
 * memloom's MemFabric-compatible common API (drop-in for MemFabric's smem/host/smem.h).
 * Every int32_t function returns 0 on success and a negative SMEM_* code (MemFabric's values) on
 * failure; the reason is kept per thread and read with smem_get_last_err_msg().
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

/* Error codes: 0 is success, failures are negative. The values are MemFabric's (its SM_* codes,
 * which its public headers do not declare: programs compare against the numbers), under memloom's
 * names: MemFabric's SM_X is SMEM_X here (SM_OBJECT_NOT_EXISTS also as SMEM_NOT_FOUND,
 * SM_NOT_CONNECTED also as SMEM_COMM_ERROR). */
#define SMEM_SUCCESS 0
#define SMEM_ERROR (-1)            /* an internal error */
#define SMEM_INVALID_PARAM (-2000) /* a null pointer, a bad handle, a value out of range */
#define SMEM_MALLOC_FAILED (-2001) /* out of device or host memory */
#define SMEM_NEW_OBJECT_FAILED (-2002)
#define SMEM_NOT_STARTED (-2003)
#define SMEM_TIMEOUT (-2004)     /* a deadline passed while waiting on peers or the store */
#define SMEM_REPEAT_CALL (-2005) /* a second join of the same object */
#define SMEM_DUPLICATED_OBJECT (-2006)
#define SMEM_OBJECT_NOT_EXISTS (-2007) /* a key, a peer or a registered region does not exist */
#define SMEM_NOT_FOUND SMEM_OBJECT_NOT_EXISTS
#define SMEM_NOT_INITIALIZED (-2008) /* smem_*_init was not called (or uninit was) */
#define SMEM_RESOURCE_IN_USE (-2009)
#define SMEM_RECONNECT (-2010)
#define SMEM_PARTIAL_FAILED (-2012)
#define SMEM_INNER_BUSY (-2013)
#define SMEM_NOT_CONNECTED (-2014) /* a peer or the store is gone, or ranks disagreed */
#define SMEM_COMM_ERROR SMEM_NOT_CONNECTED
/* memloom's own, outside MemFabric's range (MemFabric has no code for these): */
#define SMEM_NOT_IMPLEMENTED (-2100) /* not in this build (see README's status table) */
#define SMEM_NOT_SUPPORTED (-2101)   /* not supported on this backend or topology */
#define SMEM_INTERRUPTED (-2102)     /* the caller's check ended a wait (memloom/interrupt.h) */

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
