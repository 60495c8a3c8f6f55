// A decrypter library for storeTlsConfig.decrypterLibPath: its "cipher text" is the password
// reversed, and "fail" makes it report an error.
#include <cstddef>
#include <cstring>

extern "C" int DecryptPassword(const char* cipher_text, size_t cipher_text_len, char* plain_text,
                               size_t* plain_text_len) {
  if (cipher_text_len == 4 && std::memcmp(cipher_text, "fail", 4) == 0) return 7;
  if (*plain_text_len < cipher_text_len) return 1;
  for (size_t i = 0; i < cipher_text_len; ++i) plain_text[i] = cipher_text[cipher_text_len - 1 - i];
  *plain_text_len = cipher_text_len;
  return 0;
}
