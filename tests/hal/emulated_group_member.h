// A rank's membership of an emulated collectives group made the way the core's Group makes one
// (each rank publishes its node and pid through the store), for the HAL tests that exercise the
// emulated collectives directly: the store client and bootstrap the group lives on, and the group;
// and checked rounds of barriers and allgathers over it.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "hw/host/collectives_factory.h"
#include "memloom/error.h"
#include "src/core/store_bootstrap.h"
#include "src/store/client.h"
#include "tests/support/multi_process.h"

namespace memloom::testing {

struct EmulatedGroupMember {
  std::unique_ptr<store::Client> client;
  std::unique_ptr<core::StoreBootstrap> bootstrap;
  std::unique_ptr<hal::Collectives> group;
};

// Collective over the job's ranks: `name` keeps the keys of different tests' groups apart.
inline EmulatedGroupMember join_emulated_group(const RankContext& context, const std::string& name,
                                               std::chrono::milliseconds deadline) {
  EmulatedGroupMember member;
  member.client = store::Client::connect(context.store_url);
  store::KeyPrefix prefix(context.job_id + "/" + name + "/");
  member.client->set(prefix("member/" + std::to_string(context.rank)),
                     context.node + "|" + std::to_string(::getpid()));
  hal::GroupSpec spec;
  spec.rank = context.rank;
  spec.size = context.world_size;
  for (int r = 0; r < context.world_size; ++r) {
    auto value = member.client->get(prefix("member/" + std::to_string(r)), deadline);
    if (!value) raise(Status::kTimeout, "rank " + std::to_string(r) + " did not register");
    auto bar = value->rfind('|');
    spec.node_of_rank.push_back(value->substr(0, bar));
    spec.pid_of_rank.push_back(std::stoi(value->substr(bar + 1)));
  }
  member.bootstrap = std::make_unique<core::StoreBootstrap>(*member.client, prefix.sub("group"));
  member.group = host::create_collectives(spec, *member.bootstrap, Deadline::after(deadline));
  return member;
}

// `rounds` barriers, each followed by an allgather whose pieces are checked, every call bounded
// by `deadline`.
inline void checked_barrier_rounds(hal::Collectives& group, int rounds,
                                   std::chrono::milliseconds deadline) {
  std::vector<uint64_t> all(static_cast<size_t>(group.size()));
  for (int i = 0; i < rounds; ++i) {
    group.barrier(Deadline::after(deadline));
    const uint64_t mine = static_cast<uint64_t>(i) * 1000 + static_cast<uint64_t>(group.rank());
    group.allgather(&mine, all.data(), sizeof(mine), Deadline::after(deadline));
    for (int r = 0; r < group.size(); ++r) {
      ASSERT_EQ(all[static_cast<size_t>(r)], static_cast<uint64_t>(i) * 1000 + r)
          << "round " << i << ", piece of rank " << r << " on rank " << group.rank();
    }
  }
}

}  // namespace memloom::testing
