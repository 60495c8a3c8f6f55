#include "sim/inherited_fds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace memloom::sim {
namespace {

TEST(InheritedFds, RangesAreTheGapsBetweenInheritedDescriptors) {
  using Ranges = std::vector<FdRange>;
  EXPECT_EQ(fds_not_inherited({}), (Ranges{{3, UINT_MAX}}));
  EXPECT_EQ(fds_not_inherited({3}), (Ranges{{4, UINT_MAX}}));
  EXPECT_EQ(fds_not_inherited({5, 6, 9}), (Ranges{{3, 4}, {7, 8}, {10, UINT_MAX}}));
  EXPECT_EQ(fds_not_inherited({0, 2, 4}), (Ranges{{3, 3}, {5, UINT_MAX}}));
}

TEST(InheritedFds, ListsOpenDescriptorsAndMarksOnlyTheGaps) {
  int kept = ::open("/dev/null", O_RDONLY);
  int other = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(kept, 3);
  ASSERT_GE(other, 3);
  std::vector<int> open_now = open_fds_above_stderr();
  EXPECT_NE(std::find(open_now.begin(), open_now.end(), kept), open_now.end());
  EXPECT_NE(std::find(open_now.begin(), open_now.end(), other), open_now.end());
  EXPECT_TRUE(std::is_sorted(open_now.begin(), open_now.end()));

  mark_close_on_exec(fds_not_inherited({kept}), 1023);
  EXPECT_EQ(::fcntl(kept, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_NE(::fcntl(other, F_GETFD) & FD_CLOEXEC, 0);
  ::close(kept);
  ::close(other);
}

}  // namespace
}  // namespace memloom::sim
