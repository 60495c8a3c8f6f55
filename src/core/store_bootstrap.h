// hal::Bootstrap over the config store (keys under one prefix) and the process's FdBroker.
#pragma once

#include "hw/hal/bootstrap.h"
#include "src/store/client.h"

namespace memloom::core {

class StoreBootstrap : public hal::Bootstrap {
 public:
  StoreBootstrap(store::Client& client, store::KeyPrefix prefix)
      : client_(client), prefix_(std::move(prefix)) {}
  void put(const std::string& key, const std::string& value) override;
  std::string wait_get(const std::string& key, Deadline deadline) override;
  std::string publish_fd(int fd) override;
  void withdraw_fd(const std::string& token) override;
  int fetch_fd(const std::string& token, Deadline deadline) override;

 private:
  store::Client& client_;
  store::KeyPrefix prefix_;
};

}  // namespace memloom::core
