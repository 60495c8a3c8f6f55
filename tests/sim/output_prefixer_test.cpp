#include "sim/output_prefixer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace memloom::sim {
namespace {

struct Collected {
  std::vector<std::string> lines;
  OutputPrefixer::Sink sink() {
    return [this](std::string_view line) { lines.emplace_back(line); };
  }
};

TEST(OutputPrefixer, PrefixesCompleteLinesAndKeepsThePartialOne) {
  Collected got;
  OutputPrefixer prefixer("[rank 2] ", got.sink());
  prefixer.feed("one\ntwo\nthr");
  EXPECT_EQ(got.lines, (std::vector<std::string>{"[rank 2] one\n", "[rank 2] two\n"}));
  EXPECT_TRUE(prefixer.has_partial_line());
  prefixer.feed("ee");
  EXPECT_EQ(got.lines.size(), 2u);
  prefixer.feed("\n\n");
  EXPECT_EQ(got.lines, (std::vector<std::string>{"[rank 2] one\n", "[rank 2] two\n",
                                                 "[rank 2] three\n", "[rank 2] \n"}));
  EXPECT_FALSE(prefixer.has_partial_line());
}

TEST(OutputPrefixer, FinishCompletesTheLastLine) {
  Collected got;
  OutputPrefixer prefixer("[rank 0] ", got.sink());
  prefixer.feed("no newline");
  prefixer.finish();
  prefixer.finish();  // nothing left: no empty line
  EXPECT_EQ(got.lines, (std::vector<std::string>{"[rank 0] no newline\n"}));
}

TEST(OutputPrefixer, ByteByByteEqualsOneChunk) {
  const std::string text = "alpha\nbeta\n\ngamma\ndelta";
  Collected whole, bytes;
  OutputPrefixer a("> ", whole.sink());
  OutputPrefixer b("> ", bytes.sink());
  a.feed(text);
  a.finish();
  for (char c : text) b.feed(std::string_view(&c, 1));
  b.finish();
  EXPECT_EQ(whole.lines, bytes.lines);
  EXPECT_EQ(whole.lines.size(), 5u);
}

TEST(OutputPrefixer, SplitsOverlongLines) {
  Collected got;
  OutputPrefixer prefixer("P", got.sink(), 4);
  prefixer.feed("abcd");  // exactly the limit: still one line once its newline comes
  prefixer.feed("\nefghijkl");
  prefixer.feed("mn\n0123456789\n");
  EXPECT_EQ(got.lines, (std::vector<std::string>{"Pabcd\n", "Pefgh\n", "Pijkl\n", "Pmn\n",
                                                 "P0123\n", "P4567\n", "P89\n"}));
}

TEST(OutputPrefixer, WriteFullyReportsAClosedReader) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_TRUE(write_fully(fds[1], "hello\n"));
  char buffer[16] = {};
  ASSERT_EQ(::read(fds[0], buffer, sizeof(buffer)), 6);
  EXPECT_STREQ(buffer, "hello\n");
  ::close(fds[0]);
  signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(write_fully(fds[1], "lost\n"));
  ::close(fds[1]);
}

}  // namespace
}  // namespace memloom::sim
