// PeerWatch: what a rank that gave up waiting says about its peers.
#include "runtime/peer_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace sparsefuse::runtime {
namespace {


TEST(PeerWatch, NamesWhereEachPeerIs) {
  const int64_t dir = PeerWatch::make_job_directory();
  ASSERT_NE(dir, 0);
  auto r0 = PeerWatch::join(dir, 0, 3);
  auto r1 = PeerWatch::join(dir, 1, 3);
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
  const int64_t dir = PeerWatch::make_job_directory();
  auto r0 = PeerWatch::join(dir, 0, 2);
  ASSERT_TRUE(r0);
  const pid_t child = ::fork();
  if (child == 0) {  // rank 1 records a job and dies without cleaning up
    auto r1 = PeerWatch::join(dir, 1, 2);
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

TEST(PeerWatch, NoDirectoryNoWatch) {
  EXPECT_EQ(PeerWatch::join(0, 0, 2), nullptr);
  EXPECT_EQ(PeerWatch::join(int64_t('/') | int64_t('x') << 8, 0, 2), nullptr);  // not a name mkdtemp makes
}

// Two directories made at once are different (what two sandboxed jobs with
// the same launcher pid would have shared).
TEST(PeerWatch, EveryJobGetsItsOwnDirectory) {
  const int64_t a = PeerWatch::make_job_directory(), b = PeerWatch::make_job_directory();
  EXPECT_NE(a, b);
  PeerWatch::join(a, 0, 1).reset();  // joined and left: removes the directory
  PeerWatch::join(b, 0, 1).reset();
}

}  // namespace
}  // namespace sparsefuse::runtime
