// Data-parallel pieces: torchrun's variables, the buckets, the shared batch
// stream, the backend a device takes, and the collectives of two ranks (two
// threads of this process, a real TCPStore and Gloo group on 127.0.0.1) and
// of a group of one.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <string>

#include "apps/gpt2/train/launch.h"
#include "gpt2/train/distributed.h"
#include "gpt2/train/token_loader.h"

namespace gpt2 {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    read_dist_env(env_of(vars));
  } catch (const DistributedError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DistEnv, SingleProcessWhenWorldSizeIsUnsetOrOne) {
  EXPECT_FALSE(read_dist_env(env_of({})).distributed());
  EXPECT_FALSE(read_dist_env(env_of({{"WORLD_SIZE", "1"}, {"RANK", "7"}})).distributed());
}

TEST(DistEnv, ALaunchersWorldOfOneIsAGroupOnlyWhenAskedFor) {
  const std::map<std::string, std::string> one = {{"WORLD_SIZE", "1"}, {"RANK", "0"},
                                                  {"MASTER_ADDR", "127.0.0.1"},
                                                  {"MASTER_PORT", "29501"}};
  EXPECT_FALSE(read_dist_env(env_of(one)).in_group());
  const DistEnv e = read_dist_env(env_of(one), /*group_of_one=*/true);
  EXPECT_TRUE(e.in_group());
  EXPECT_FALSE(e.distributed());
  EXPECT_EQ(e.world_size, 1);
  EXPECT_EQ(e.master_port, 29501);
  // Without a rendezvous address there is no group to form.
  EXPECT_FALSE(read_dist_env(env_of({{"WORLD_SIZE", "1"}, {"RANK", "0"}}), true).in_group());
}

TEST(DistEnv, ReadsTorchrunsVariables) {
  const DistEnv e = read_dist_env(env_of({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"},
                                          {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                                          {"MASTER_PORT", "29501"},
                                          {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                          {"TORCHELASTIC_RUN_ID", "abc"}}));
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29501);
  EXPECT_TRUE(e.agent_store);
  EXPECT_EQ(e.store_prefix, "gpt2/abc/0");
}

TEST(DistEnv, LocalRankAndSizeDefaultToTheGlobalOnes) {
  const DistEnv e = read_dist_env(env_of({{"WORLD_SIZE", "3"}, {"RANK", "2"},
                                          {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "29501"}}));
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world_size, 3);
  EXPECT_FALSE(e.agent_store);
}

TEST(DistEnv, BadOrMissingVariablesAreNamedWithTheirValues) {
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}}).find("RANK is not set"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}, {"RANK", "-1"}}).find("RANK='-1' must be an integer in [0, 2)"),
            std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "two"}}).find("WORLD_SIZE='two'"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}, {"RANK", "0"}}).find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"},
                      {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT='70000' must be an integer in [1, 65535]"),
            std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "no-such-host.invalid"},
                      {"MASTER_PORT", "29500"}})
                .find("MASTER_ADDR 'no-such-host.invalid' does not resolve"),
            std::string::npos);
}

TEST(ProcessGroupBackend, GlooOnTheCpuNcclOnCudaWhereTheBuildHasIt) {
  for (const bool nccl : {false, true}) {
    EXPECT_EQ(process_group_backend(torch::kCPU, nccl), "gloo");
  }
  EXPECT_EQ(process_group_backend(torch::Device(torch::kCUDA, 1), true), "nccl");
  try {
    process_group_backend(torch::Device(torch::kCUDA, 1), false);
    ADD_FAILURE() << "a GPU without NCCL was accepted";
  } catch (const DistributedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("data-parallel training on cuda:1 runs on NCCL, and this LibTorch (" +
                        std::string(TORCH_VERSION) + ") has no NCCL"),
              std::string::npos) << what;
  }
  EXPECT_THROW(process_group_backend(torch::kMeta, true), DistributedError);
}

// A CUDA group in a build without NCCL, or on a machine without a GPU, is
// refused before rank 0 serves the store: at once, not after waiting for a
// peer that never comes.
TEST(DataParallel, ACudaGroupWithoutNcclOrAGpuIsRefusedBeforeAnySocket) {
  if (has_nccl() && torch::cuda::is_available()) {
    GTEST_SKIP() << "NCCL and a GPU here (tests/gpu/nccl_test.cpp forms such a group)";
  }
  DistEnv env;
  env.world_size = env.local_world_size = 2;
  env.master_addr = "127.0.0.1";
  env.master_port = app::free_loopback_port();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(DataParallel(env, std::chrono::seconds(60), 64, torch::kCUDA), DistributedError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Buckets, FillUpToTheCapInOrderAndABigTensorStandsAlone) {
  // 4 bytes per float: 10, 10, 30 and 5 floats against a 80-byte cap.
  const std::vector<torch::Tensor> ts = {torch::zeros({10}), torch::zeros({2, 5}),
                                         torch::zeros({30}), torch::zeros({5})};
  const auto b = bucket_ranges(ts, 80);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], std::make_pair(size_t{0}, size_t{2}));
  EXPECT_EQ(b[1], std::make_pair(size_t{2}, size_t{3}));
  EXPECT_EQ(b[2], std::make_pair(size_t{3}, size_t{4}));
}

TEST(TokenLoader, SkipLeavesTheStreamWhereNextWould) {
  const std::string path = ::testing::TempDir() + "/skip_tokens.bin";
  const torch::Tensor ids = torch::arange(1000, torch::kInt16);
  std::ofstream(path, std::ios::binary).write(static_cast<const char*>(ids.data_ptr()), 2000);
  auto file = std::make_shared<const TokenFile>(path);
  TokenLoader a(file, 3, 8, 42), b(file, 3, 8, 42);
  a.next();
  a.next();
  b.skip(2);
  EXPECT_TRUE(torch::equal(a.next().x.clone(), b.next().x.clone()));
}

// Each rank r holds tensors filled with r + 1 and gradients with 10 (r + 1),
// the second without a gradient; returns what they hold after a broadcast
// and an average, and the mean loss. Buckets of 64 bytes: one per tensor.
struct RankResult {
  std::vector<torch::Tensor> values, grads;
  double mean = 0;
};
RankResult run_rank(int64_t rank, int port) {
  DistEnv env;
  env.rank = rank;
  env.world_size = env.local_world_size = 2;
  env.local_rank = rank;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  DataParallel dp(env, std::chrono::seconds(20), 64);
  std::vector<torch::Tensor> ts = {torch::full({3, 4}, rank + 1.0), torch::full({5}, rank + 1.0),
                                   torch::full({2}, rank + 1.0)};
  for (size_t i : {0, 2}) ts[i].mutable_grad() = torch::full_like(ts[i], 10.0 * (rank + 1));
  dp.broadcast(ts);
  RankResult r;
  r.mean = dp.average_gradients(ts, rank == 0 ? 1.0 : 2.0);
  for (auto& t : ts) {
    r.values.push_back(t.clone());
    r.grads.push_back(t.grad().clone());
  }
  EXPECT_EQ(dp.stats().buckets, 2);  // 48 bytes, then 20 + 8
  EXPECT_EQ(dp.stats().bytes, 19 * 4);
  return r;
}

TEST(DataParallel, TwoRanksGetRank0sValuesAndTheMeanGradientInEveryBucket) {
  const int port = app::free_loopback_port();
  auto r1 = std::async(std::launch::async, run_rank, 1, port);
  const RankResult r0 = run_rank(0, port);
  const RankResult other = r1.get();
  for (const RankResult* r : {&r0, &other}) {
    EXPECT_DOUBLE_EQ(r->mean, 1.5);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(torch::equal(r->values[i], torch::ones_like(r->values[i]))) << i;
      const double mean = i == 1 ? 0.0 : 15.0;  // a missing gradient counts as zeros
      EXPECT_TRUE(torch::equal(r->grads[i], torch::full_like(r->grads[i], mean))) << i;
    }
  }
}

// A launcher's world of one forms a group of one (the path one GPU runs on
// NCCL, here on Gloo): its average is its own gradient, its sum its value.
TEST(DataParallel, AGroupOfOneAveragesToItsOwnValues) {
  DistEnv env;
  env.master_addr = "127.0.0.1";
  env.master_port = app::free_loopback_port();
  DataParallel dp(env, std::chrono::seconds(20), 64);
  EXPECT_EQ(dp.backend(), "gloo");
  std::vector<torch::Tensor> ts = {torch::full({3, 4}, 2.0), torch::full({5}, 3.0)};
  ts[0].mutable_grad() = torch::full_like(ts[0], 7.0);
  dp.broadcast(ts);
  EXPECT_DOUBLE_EQ(dp.average_gradients(ts, 0.25), 0.25);
  EXPECT_TRUE(torch::equal(ts[0].grad(), torch::full_like(ts[0], 7.0)));
  EXPECT_TRUE(torch::equal(ts[1].grad(), torch::zeros_like(ts[1])));
  EXPECT_TRUE(torch::equal(ts[1], torch::full_like(ts[1], 3.0)));
  EXPECT_DOUBLE_EQ(dp.sum(1.5), 1.5);
  dp.check_same("recipe", "the same text");
}

}  // namespace
}  // namespace gpt2
