// PeerWatch: what a rank that gave up waiting says about its peers.
#include "runtime/peer_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace sparsefuse::runtime {
namespace {

std::string job_id(const char* test) { return std::string(test) + "-" + std::to_string(::getpid()); }

TEST(PeerWatch, NamesWhereEachPeerIs) {
  const std::string id = job_id("where");
  auto r0 = PeerWatch::start(id, 0, 3);
  auto r1 = PeerWatch::start(id, 1, 3);
  ASSERT_TRUE(r0 && r1);
  r0->job_started(4, "flush #3 of iteration 0 (allreduce of tensors [0, 2))");
  r1->job_started(3, "flush #2 of iteration 0 (allgather of tensors [2, 3))");
  const std::string peers = r0->describe_peers();
  const std::string pid = std::to_string(::getpid());
  EXPECT_NE(peers.find("rank 1 (pid " + pid + ") is alive at job #3 while this rank waits at job #4: its last job "
                       "(#3, flush #2 of iteration 0 (allgather of tensors [2, 3))) started"),
            std::string::npos)
      << peers;
  EXPECT_NE(peers.find("rank 2: no record on this node"), std::string::npos) << peers;
  r1->job_started(4, "flush #3 of iteration 0 (allreduce of tensors [0, 2))");
  EXPECT_NE(r0->describe_peers().find("rank 1 (pid " + pid + ") is alive in the same job #4"), std::string::npos);
  r1.reset();  // a rank that finished removes its record
  EXPECT_NE(r0->describe_peers().find("rank 1: no record on this node"), std::string::npos);
}

TEST(PeerWatch, AProcessThatDiedIsNamed) {
  const std::string id = job_id("died");
  auto r0 = PeerWatch::start(id, 0, 2);
  ASSERT_TRUE(r0);
  const pid_t child = ::fork();
  if (child == 0) {  // rank 1 records a job and dies without cleaning up
    auto r1 = PeerWatch::start(id, 1, 2);
    if (r1) r1->job_started(1, "the fingerprint exchange");
    ::_exit(r1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const std::string peers = r0->describe_peers();
  EXPECT_NE(peers.find("rank 1 (pid " + std::to_string(child) + ") has exited; its last job (#1, the fingerprint "
                       "exchange) started"),
            std::string::npos)
      << peers;
  r0->remove_all_records();
  EXPECT_NE(r0->describe_peers().find("rank 1: no record on this node"), std::string::npos);
}

TEST(PeerWatch, NoJobIdNoWatch) { EXPECT_EQ(PeerWatch::start("", 0, 2), nullptr); }

}  // namespace
}  // namespace sparsefuse::runtime
