// `gpt2 bench train`'s flags (bench_train.h); run_bench_train runs it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "apps/gpt2/bench/bench_command.h"
#include "apps/gpt2/bench/bench_train.h"
#include "apps/gpt2/common/cli_main.h"
#include "apps/gpt2/common/model_flags.h"

namespace gpt2::app {

void add_bench_train_command(CLI::App& bench, int* rc) {
  auto f = std::make_shared<BenchTrainFlags>();
  CLI::App* t = bench.add_subcommand(
      "train", "One training step, by phase, beside the same step in Python (python3-torch)");
  add_step_shape_flags(*t, f->preset, f->batch, f->seq);
  t->add_option("--steps", f->steps, "Timed steps")->check(gpt2::app::in_range(1, 1000))->capture_default_str();
  t->add_option("--warmup", f->warmup, "Untimed steps first")->check(gpt2::app::in_range(0, 100))
      ->capture_default_str();
  t->add_option("--rounds", f->rounds, "Alternating rounds")->check(gpt2::app::in_range(1, 20))
      ->capture_default_str();
  t->add_option("--threads", f->threads,
                 "torch intra-op threads (0: as the gpt2 command: OMP_NUM_THREADS, else the usable cores)")
      ->check(gpt2::app::in_range(0, 256))->capture_default_str();
  t->add_option("--peer-threads", f->peer_threads,
                 "The Python side's torch intra-op threads, one side per value (0: as --threads); "
                 "1,2 finds its fastest")
      ->delimiter(',')->check(gpt2::app::in_range(0, 256));
  t->add_option("--matmul", f->matmul,
                "The C++ side's float32 products (auto: the rule gpt2::matmul_backend() follows)")
      ->check(CLI::IsMember({"auto", "onednn", "torch"}))->capture_default_str();
  t->add_option("--peer-blas-core", f->peer_blas_core,
                "Also run the peer with OPENBLAS_CORETYPE set to this (auto: when OpenBLAS "
                "fell back to generic kernels; none: never)")
      ->check(CLI::Validator(
          [](std::string& core) -> std::string {
            const bool plain = !core.empty() && std::all_of(core.begin(), core.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c));
            });
            return plain ? "" : "an OpenBLAS core name is letters and digits, got '" + core + "'";
          }, "NAME", "core name"))
      ->capture_default_str();
  add_device_flag(*t, f->device);
  add_dtype_flag(*t, f->dtype);
  t->add_flag("--peer-compile", f->peer_compile, "Also time the peer under torch.compile (GPU)");
  t->add_flag("--peer-shipped", f->peer_shipped,
              "Also time the peer as nanoGPT's bench.py ships it: the vocabulary padded to a "
              "multiple of 64, no biases (on a GPU under torch.compile with --peer-compile)");
  t->add_option("--peer-python", f->peer_python, "The python3 that runs the peer")
      ->capture_default_str();
  t->add_option("--side-timeout", f->side_timeout,
                "Seconds each run of a side in its own process (app, Python) may take; a side "
                "that runs out, exits non-zero or prints no figures is reported FAILED, is not "
                "run again, and the bench goes on")
      ->check(gpt2::app::in_range(1, 86400))->capture_default_str();
  t->add_option("--profile-steps", f->profile_steps,
                "On a GPU: after the rounds, run this many C++ steps under LibTorch's profiler "
                "and print the device time of each kernel, largest first, then of each kind "
                "of kernel beside its floor (0: none)")
      ->check(gpt2::app::in_range(0, 100))->capture_default_str();
  t->add_flag("--logits-side", f->logits_side,
              "Also time this library's step with nanoGPT's forward, which makes the (B, T, V) "
              "logits before the loss, in this process, alternating: what the fused head "
              "(GPTImpl::loss) saves");
  t->add_flag("--torch-ops-side", f->torch_ops_side,
              "On a GPU: also time this library's step with torch's ops where it has CUDA "
              "kernels of its own, in this process, alternating: what those kernels gain");
  t->add_flag("--no-peer", f->no_peer, "Do not run the Python peer");
  t->add_flag("--no-app", f->no_app, "Do not run the linking app (gpt2-app-step), default or configured");
  t->callback([f, rc] { *rc = run_bench_train(*f, std::cout); });
}

}  // namespace gpt2::app
