// The rule both backends use to pick the process's device (hw/host/device_choice.h), with the
// calling thread's device given as a number, so the CUDA rule (a device chosen by cudaSetDevice
// wins when no variable is set) is checked without a GPU.
#include "hw/host/device_choice.h"

#include <gtest/gtest.h>

#include "memloom/error.h"

namespace memloom::host {
namespace {

base::Environment variables(int device, int local_rank) {
  base::Environment env;
  env.device = device;
  env.local_rank = local_rank;
  return env;
}

TEST(DeviceChoice, MemloomDeviceWinsOverEverything) {
  const auto choice = choose_device(variables(3, 1), 4, 2, "GPUs");
  EXPECT_EQ(3, choice.device);
  EXPECT_TRUE(choice.fixed);
  EXPECT_NE(std::string::npos, choice.reason.find("MEMLOOM_DEVICE=3"));
}

TEST(DeviceChoice, LocalRankSpreadsOverTheDevicesBeforeTheThreadsChoice) {
  const auto choice = choose_device(variables(-1, 5), 4, 2, "GPUs");
  EXPECT_EQ(1, choice.device);
  EXPECT_TRUE(choice.fixed);
  EXPECT_NE(std::string::npos, choice.reason.find("MEMLOOM_LOCAL_RANK=5"));
}

TEST(DeviceChoice, TheThreadsDeviceWinsWhenNoVariableIsSet) {
  const auto choice = choose_device(variables(-1, -1), 4, 2, "GPUs");
  EXPECT_EQ(2, choice.device);
  EXPECT_FALSE(choice.fixed);  // later cudaSetDevice calls are followed
  EXPECT_NE(std::string::npos, choice.reason.find("calling thread"));
}

TEST(DeviceChoice, DeviceZeroWhenNothingChoosesOne) {
  const auto choice = choose_device(variables(-1, -1), 4, -1, "GPUs");
  EXPECT_EQ(0, choice.device);
  EXPECT_FALSE(choice.fixed);
  EXPECT_NE(std::string::npos, choice.reason.find("default"));
  // A thread device the backend does not have is no choice either.
  EXPECT_EQ(0, choose_device(variables(-1, -1), 2, 7, "GPUs").device);
}

TEST(DeviceChoice, MemloomDeviceBeyondTheDevicesIsRefused) {
  try {
    choose_device(variables(4, -1), 4, -1, "GPUs");
    FAIL() << "MEMLOOM_DEVICE=4 of 4 GPUs was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(Status::kInvalidValue, error.status());
    EXPECT_NE(std::string::npos, std::string(error.what()).find("only 4 GPUs"));
  }
}

}  // namespace
}  // namespace memloom::host
