// Limits on data and per-job namespaces: one job's clients cannot fill the store for everyone,
// nor read, overwrite or delete another job's keys, and two jobs on one store do not collide.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "memloom/error.h"
#include "tests/store/store_test_support.h"
#include "tests/support/status_of.h"

namespace memloom::store::testing {
namespace {

std::unique_ptr<Client> connect_as(const Server& server, const std::string& job) {
  ClientOptions options = quick_client_options();
  options.job_namespace = job;
  return Client::connect(server.url(), options);
}

std::unique_ptr<Client> connect_keyed(const Server& server, const std::string& job,
                                      const std::string& secret) {
  ClientOptions options = quick_client_options();
  options.job_namespace = job;
  options.job_secret = secret;  // "": no key
  return Client::connect(server.url(), options);
}

// Expects the hello to be refused with a message about the job secret. A client the server let
// in must at least not see `key` (the job's own): that is the leak the key prevents.
void expect_refused(const Server& server, const std::string& job, const std::string& secret,
                    const std::string& key) {
  try {
    auto intruder = connect_keyed(server, job, secret);
    ADD_FAILURE() << "a client with " << (secret.empty() ? "no key" : "a wrong key")
                  << " joined job namespace '" << job << "'";
    EXPECT_EQ(intruder->get(key, 0ms), std::nullopt) << "and read the job's key " << key;
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kInvalidValue) << error.what();
    EXPECT_NE(std::string(error.what()).find("job secret"), std::string::npos) << error.what();
  }
}

using ::memloom::testing::status_of;

TEST(StoreLimits, OverSizeValueIsRefused) {
  ServerOptions options;
  options.max_value_bytes = 1024;
  auto server = Server::start(options);
  auto client = connect_as(*server, "job");
  EXPECT_EQ(status_of([&] { client->set("big", std::string(2048, 'x')); }), Status::kInvalidInput);
  client->set("small", std::string(1000, 'x'));
  EXPECT_EQ(status_of([&] { client->append("small", std::string(100, 'x')); }),
            Status::kInvalidInput);
}

TEST(StoreLimits, OverTotalIsRefusedWithOutOfMemoryUntilKeysGo) {
  ServerOptions options;
  options.max_total_bytes = 64 * 1024;
  auto server = Server::start(options);
  auto client = connect_as(*server, "job");
  const std::string value(8 * 1024, 'v');
  for (int i = 0; i < 7; ++i) client->set("k" + std::to_string(i), value);
  try {
    client->set("k7", value + value);
    FAIL() << "the store grew past max_total_bytes";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::kOutOfMemory);
    EXPECT_NE(std::string(error.what()).find("max_total_bytes"), std::string::npos) << error.what();
  }
  EXPECT_EQ(status_of([&] { client->append("k0", value); }), Status::kOutOfMemory);
  client->set("k0", "short");  // shrinking a value is always allowed
  EXPECT_TRUE(client->remove("k1"));
  EXPECT_NO_THROW(client->set("k7", value + value));
  // Another job is refused too: the cap is the store's, not a job's.
  auto other = connect_as(*server, "other");
  EXPECT_EQ(status_of([&] { other->set("x", value); }), Status::kOutOfMemory);
}

TEST(StoreNamespaces, AnotherJobCannotReadWriteOrDeleteKeys) {
  ServerOptions options;
  auto server = Server::start(options);
  auto a = connect_as(*server, "job-a");
  auto b = connect_as(*server, "job-b");
  a->set("secret", "a1");
  a->set("group/member/0", "a-rank0");
  EXPECT_EQ(b->get("secret", 0ms), std::nullopt);
  EXPECT_EQ(b->get("secret", 100ms), std::nullopt);
  b->set("secret", "b1");
  EXPECT_FALSE(b->compare_and_swap("group/member/0", "a-rank0", "stolen", false, nullptr));
  EXPECT_EQ(b->add("counter", 5), 5);
  EXPECT_TRUE(b->remove("secret"));  // its own key of the same name
  EXPECT_FALSE(b->remove("group/member/0"));
  EXPECT_EQ(b->remove_prefix(""), 1u);  // only b's "counter"
  EXPECT_EQ(a->get("secret", 0ms), "a1");
  EXPECT_EQ(a->get("group/member/0", 0ms), "a-rank0");
  EXPECT_EQ(a->get("counter", 0ms), std::nullopt);

  EventLog b_events;
  b->watch_key("secret", b_events.callback());
  a->set("secret", "a2");
  a->remove("secret");
  EventLog a_events;
  a->watch_key("secret", a_events.callback());
  b->set("secret", "b2");
  EXPECT_TRUE(b_events.wait_for(1, 2000ms).size() == 1);  // its own write only
  EXPECT_EQ(b_events.events()[0].value, "b2");
  EXPECT_EQ(b_events.events()[0].key, "secret");  // the namespace never shows
  EXPECT_TRUE(a_events.wait_for(1, 200ms).empty());
}

TEST(StoreNamespaces, KeysOfAnEndedJobAreRemovedAfterTheGrace) {
  ServerOptions options;
  options.namespace_grace = 200ms;
  auto server = Server::start(options);
  auto other = connect_as(*server, "other-job");
  other->set("kept", "1");
  {
    auto a = connect_as(*server, "job-a");
    a->set("group/member/0", "crashed");
  }
  {
    auto again = connect_as(*server, "job-a");  // within the grace: still there
    EXPECT_EQ(again->get("group/member/0", 0ms), "crashed");
  }
  std::this_thread::sleep_for(600ms);
  auto next = connect_as(*server, "job-a");
  EXPECT_EQ(next->get("group/member/0", 0ms), std::nullopt);
  EXPECT_TRUE(next->compare_and_swap("group/member/0", "", "next", true, nullptr));
  EXPECT_EQ(other->get("kept", 0ms), "1");
}

// Two jobs, two ranks each, started the usual way (the launcher's job id in the environment, no
// MEMLOOM_JOB_ID), claim the same rank keys on one store at the same time: all four succeed
// (the second job used to fail with "rank 0 ... was already taken").
TEST(StoreNamespaces, TwoJobsWithDefaultSettingsBothRun) {
  // The ranks are forked before the server starts any thread (a child of a threaded process may
  // find an allocator lock held forever, as under ASan); they learn its URL through a pipe.
  int url_pipe[2];
  ASSERT_EQ(::pipe(url_pipe), 0);
  std::vector<pid_t> children;
  for (const char* job : {"4711", "4712"}) {
    for (int rank = 0; rank < 2; ++rank) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::alarm(20);
        ::close(url_pipe[1]);
        char url[64] = {};
        if (::read(url_pipe[0], url, sizeof(url)) != static_cast<ssize_t>(sizeof(url))) {
          ::_exit(4);
        }
        ::unsetenv("MEMLOOM_JOB_ID");
        ::setenv("SLURM_JOB_ID", job, 1);
        int code = 0;
        try {
          auto client = Client::connect(url, quick_client_options());
          const std::string prefix = "smem/shm/w0/world/member/";
          std::string mine = std::string(job) + "/" + std::to_string(rank);
          if (!client->compare_and_swap(prefix + std::to_string(rank), "", mine, true, nullptr)) {
            code = 1;  // "already taken"
          } else if (client->get(prefix + std::to_string(1 - rank), 5000ms) !=
                     std::string(job) + "/" + std::to_string(1 - rank)) {
            code = 2;  // a peer of the other job answered, or none
          } else {
            client->add("done", 1);
            client->get("never", 300ms);  // stay connected while the peer reads my key
          }
        } catch (...) {
          code = 3;
        }
        ::_exit(code);
      }
      children.push_back(pid);
    }
  }
  ::close(url_pipe[0]);
  auto server = Server::start(ServerOptions{});
  char url[64] = {};
  ASSERT_LT(server->url().size(), sizeof(url));
  std::memcpy(url, server->url().data(), server->url().size());
  for (size_t i = 0; i < children.size(); ++i) {
    // Writes of this size are atomic on a pipe: each child reads one whole URL.
    ASSERT_EQ(::write(url_pipe[1], url, sizeof(url)), static_cast<ssize_t>(sizeof(url)));
  }
  ::close(url_pipe[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank process exited with " << status;
  }
}

// A local user of another account knows (or guesses) the job's namespace name but not its
// secret: it must neither join the namespace nor read the TRANS job secret stored there.
TEST(StoreNamespaceKeys, WrongOrMissingKeyIsRefusedAndCannotRead) {
  auto server = Server::start(ServerOptions{});
  auto job = connect_keyed(*server, "j42", "secret-of-j42");
  job->set("memloom/smem/trans/job_secret", "trans-secret");
  expect_refused(*server, "j42", "another-secret", "memloom/smem/trans/job_secret");
  expect_refused(*server, "j42", "", "memloom/smem/trans/job_secret");
  // The refusals cost the job nothing: its connection and keys are as they were.
  EXPECT_EQ(job->get("memloom/smem/trans/job_secret", 0ms), "trans-secret");
}

// The other way round: a namespace opened without a key (by an old client, or by someone who
// got there first) must not take in the job's keyed clients, or they would hand it their keys.
TEST(StoreNamespaceKeys, KeylessNamespaceRefusesKeyedClients) {
  auto server = Server::start(ServerOptions{});
  auto squatter = connect_keyed(*server, "j43", "");
  squatter->set("planted", "1");
  expect_refused(*server, "j43", "secret-of-j43", "planted");
  EXPECT_NO_THROW(connect_keyed(*server, "j43", ""));  // keyless clients still share it
}

// Ranks of one job share the namespace, and the binding outlives its connections for as long as
// the keys do (the grace): nobody can slip in between two processes of the job.
TEST(StoreNamespaceKeys, SameSecretSharesTheNamespaceThroughTheGrace) {
  ServerOptions options;
  options.namespace_grace = 200ms;
  auto server = Server::start(options);
  {
    auto rank0 = connect_keyed(*server, "j44", "secret-of-j44");
    auto rank1 = connect_keyed(*server, "j44", "secret-of-j44");
    rank0->set("k", "v");
    EXPECT_EQ(rank1->get("k", 0ms), "v");
  }
  expect_refused(*server, "j44", "another-secret", "k");  // within the grace
  EXPECT_EQ(connect_keyed(*server, "j44", "secret-of-j44")->get("k", 0ms), "v");
  std::this_thread::sleep_for(600ms);
  // The namespace ended with its keys: the name is free again, for a new job with a new secret.
  EXPECT_EQ(connect_keyed(*server, "j44", "next-secret")->get("k", 0ms), std::nullopt);
}

// The default: the secret comes from MEMLOOM_JOB_SECRET, as memloom-run sets it for its ranks.
TEST(StoreNamespaceKeys, SecretFromTheEnvironment) {
  auto server = Server::start(ServerOptions{});
  // The variables are read at each connect; ctest runs each test in a process of its own.
  ::setenv("MEMLOOM_JOB_ID", "j45", 1);
  ::setenv("MEMLOOM_JOB_SECRET", "secret-of-j45", 1);
  Client::connect(server->url(), quick_client_options())->set("k", "from-env");
  ::unsetenv("MEMLOOM_JOB_ID");
  ::unsetenv("MEMLOOM_JOB_SECRET");
  // That client is gone; its keys and its binding stay for the grace.
  EXPECT_EQ(connect_keyed(*server, "j45", "secret-of-j45")->get("k", 0ms), "from-env");
  expect_refused(*server, "j45", "", "k");
}

}  // namespace
}  // namespace memloom::store::testing
