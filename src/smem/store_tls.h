// MemFabric's two ways of configuring TLS for the config store, turned into store::TlsConfig:
// the process-wide calls (smem_set_conf_store_tls, smem_set_config_store_tls_key) and the
// storeTlsConfig member of smem_bm_config_t.
#pragma once

#include <memory>

#include "smem/host/smem.h"
#include "smem/host/smem_bm_def.h"
#include "src/store/tls_config.h"

namespace memloom::smem {

// MemFabric's password decryptor as a store::PasswordDecryptor: the handler gets a buffer of
// max(cipherTextLen, 1024) bytes, plainTextLen holds that capacity on entry and the password's
// length on return; a nonzero return is an error. The buffer is wiped after use.
store::PasswordDecryptor password_decryptor(smem_decrypt_handler handler);

// storeTlsConfig (tlsEnable set): caPath is the CA file, crlPath an optional CRL file, certPath
// the certificate, keyPath the private key (PEM), keyPassPath an optional file holding the key's
// password (a trailing newline is ignored), decrypterLibPath an optional shared library whose
// `DecryptPassword` (smem_decrypt_handler's signature) decrypts that password, packagePath is
// accepted and unused (memloom links the system OpenSSL). Reads the files now; throws
// memloom::Error(kInvalidInput) naming the field that is wrong.
std::shared_ptr<const store::TlsConfig> tls_config_from(const smem_tls_config& config);

}  // namespace memloom::smem
