// A program outside the memloom tree: it must build from the installed headers and library alone,
// through pkg-config or find_package(memloom), and run.
#include <smem/host/smem.h>

#include <cstdio>
#include <cstring>

int main() {
  if (smem_init(0) != 0) return 1;
  // A refused call proves the library really ran: it must fail with a message.
  if (smem_set_log_level(7) == 0) return 2;
  const char* message = smem_get_and_clear_last_err_msg();
  if (message == nullptr || std::strstr(message, "log level") == nullptr) return 3;
  smem_uninit();
  std::puts("outside app: ok");
  return 0;
}
