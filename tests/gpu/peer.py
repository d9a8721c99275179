"""The Python side of the GPU check (tests/gpu/run.sh), on the first CUDA device.

  versions  torch, its CUDA, its C++ ABI, its CMake prefix, transformers
  peak      the bf16 product peak that MFU divides by: an 8192^3 bf16 matmul,
            median of 10 after warm-up; and GPT-2 124M's FLOPs per token at T=1024
  train     nanoGPT's training step of GPT-2 124M (apps/bench/peer_step.py's model)
            under bf16 autocast, fused AdamW: tokens/s eager and torch.compile'd
  generate  Hugging Face GPT2LMHeadModel (GPT2Config(), random weights), greedy
            with its KV cache: tokens/s at batch 1 and 32, float32 and bfloat16

Usage: python3 tests/gpu/peer.py versions | peak | train --batch-size B [--peak TFLOPS]
       | generate [--new-tokens 128]
Each result is one line `name value [unit]`, which run.sh copies into its summary.
"""
import argparse
import os
import statistics
import sys
import time

import torch

# The model is peer_step.py's: the same nanoGPT shape `gpt2 bench train` compares against.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "apps", "bench"))

# GPT-2 124M, as the C++ `gpt2` preset: vocabulary unpadded (50257), 1024 positions.
N_LAYER, N_HEAD, N_EMBD, VOCAB, BLOCK = 12, 12, 768, 50257, 1024


def flops_per_token(T):
    """nanoGPT's estimate_mfu: 6 N (N without the position table) + attention's 12 L H Q T."""
    n = 12 * N_LAYER * N_EMBD ** 2 + 13 * N_LAYER * N_EMBD + 2 * N_EMBD + VOCAB * N_EMBD
    return 6 * n + 12 * N_LAYER * N_HEAD * (N_EMBD // N_HEAD) * T


def seconds(fn, repeats, warmup):
    """Median wall seconds of fn() over `repeats` runs after `warmup`, the device synced."""
    times = []
    for i in range(warmup + repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def versions(_):
    print("torch", torch.__version__)
    print("torch_cuda", torch.version.cuda)
    print("torch_cxx11_abi", torch._C._GLIBCXX_USE_CXX11_ABI)
    print("torch_cmake_prefix", torch.utils.cmake_prefix_path)
    try:
        import transformers
        print("transformers", transformers.__version__)
    except ImportError:
        print("transformers none")


def peak(_):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    s = seconds(lambda: a @ b, repeats=10, warmup=3)
    print(f"peak_bf16_tflops {2 * n ** 3 / s / 1e12:.1f}")
    print(f"flops_per_token {flops_per_token(BLOCK)}")


def train(args):
    from peer_step import GPT

    torch.backends.cuda.matmul.allow_tf32 = True  # as nanoGPT's train.py
    torch.manual_seed(0)
    model = GPT(N_LAYER, N_HEAD, N_EMBD, VOCAB, BLOCK).cuda()
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), fused=True)
    B, T = args.batch_size, BLOCK
    x = torch.randint(VOCAB, (B, T), device="cuda")
    y = torch.randint(VOCAB, (B, T), device="cuda")

    def step(m):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()

    for name, m in (("eager", model), ("compiled", torch.compile(model))):
        start = time.perf_counter()
        s = seconds(lambda: step(m), repeats=args.steps, warmup=args.warmup)
        rate = B * T / s
        about = [f"B {B} T {T}", f"step {1000 * s:.1f} ms"]
        if args.peak:
            about.append(f"MFU {100 * rate * flops_per_token(T) / (args.peak * 1e12):.1f}%")
        about.append(f"{time.perf_counter() - start:.0f} s with warm-up")
        print(f"py_train_{name}_tokens_per_s {rate:.0f} ({', '.join(about)})")
    print(f"py_train_peak_memory_gb {torch.cuda.max_memory_allocated() / 1e9:.1f}")


def generate(args):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config()
    n, prompt = args.new_tokens, args.prompt_tokens
    for dtype in (torch.float32, torch.bfloat16):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).to("cuda", dtype).eval()
        for B in (1, 32):
            ids = torch.randint(config.vocab_size, (B, prompt), device="cuda")
            kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                          do_sample=False, use_cache=True, pad_token_id=config.eos_token_id)
            out = []
            with torch.inference_mode():
                s = seconds(lambda: out.append(model.generate(ids, **kwargs)), repeats=3, warmup=1)
            if out[-1].shape != (B, prompt + n):
                raise SystemExit(f"generate gave {tuple(out[-1].shape)}, not {(B, prompt + n)}")
            name = str(dtype).replace("torch.", "")
            print(f"hf_generate_b{B}_{name}_tokens_per_s {B * n / s:.1f} "
                  f"(prompt {prompt}, {n} new, greedy, KV cache, {s:.2f} s a run)")
        del model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("versions").set_defaults(run=versions)
    sub.add_parser("peak").set_defaults(run=peak)
    t = sub.add_parser("train")
    t.add_argument("--batch-size", type=int, required=True)
    t.add_argument("--steps", type=int, default=10)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--peak", type=float, default=0.0, help="bf16 TFLOP/s for MFU (from `peak`)")
    t.set_defaults(run=train)
    g = sub.add_parser("generate")
    g.add_argument("--new-tokens", type=int, default=128)
    g.add_argument("--prompt-tokens", type=int, default=16)
    g.set_defaults(run=generate)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
