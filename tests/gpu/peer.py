"""The Python side of the GPU check (tests/gpu/run.sh), on the first CUDA device.

  versions  torch, its CUDA, its C++ ABI, its CMake prefix, transformers
  peak      the bf16 product peak that MFU divides by: an 8192^3 bf16 matmul,
            median of 10 after warm-up; and GPT-2 124M's FLOPs per token at T=1024
  generate  Hugging Face GPT2LMHeadModel (GPT2Config(), random weights), greedy
            with its KV cache: tokens/s at batch 1 and 32, float32 and bfloat16
  levers    what torch's own choices would gain the training step, one layer of
            GPT-2 124M at B 32, T 1024, bf16, alternating: causal attention
            forward and backward by each of scaled_dot_product_attention's
            kernels (flash, cuDNN, memory-efficient); c_fc with its GELU as two
            ops and as one (cuBLASLt's epilogue, torch._addmm_activation)

Usage: python3 tests/gpu/peer.py versions | peak | generate [--new-tokens 128] | levers [--batch 32]
The training step's Python side is `gpt2 bench train`'s own peer
(apps/bench/peer_step.py), eager and compiled, alternating with the C++ sides.
Each result is one line `name value [unit]`, which run.sh copies into its summary.
"""
import argparse
import statistics
import time

import torch

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


def alternating(fns, repeats=7, warmup=2):
    """Median seconds of each of fns (name -> callable), one run of each per round."""
    times = {name: [] for name in fns}
    for i in range(warmup + repeats):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in times.items()}


def levers(args):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    if args.batch < 1:
        raise SystemExit(f"levers: --batch must be at least 1, got {args.batch}")
    B, T, H, C = args.batch, BLOCK, N_HEAD, N_EMBD
    torch.manual_seed(0)
    shape = (B, H, T, C // H)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    dy = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    kernels = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "efficient": SDPBackend.EFFICIENT_ATTENTION}

    def attention(backend):
        def run():
            with sdpa_kernel(backend):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y.backward(dy)
        return run

    usable, refused = {}, []
    for name, backend in kernels.items():
        try:
            attention(backend)()
            usable[name] = attention(backend)
        except RuntimeError as e:
            refused.append(f"{name} refused: {str(e).splitlines()[0][:80]}")
    times = alternating(usable)
    print("lever_attention_ms " + " ".join(f"{n} {1e3 * t:.3f}" for n, t in times.items()) +
          f" (one layer's causal attention, forward and backward, B {B}, T {T}, {H} heads of "
          f"{C // H}, bf16{'; ' if refused else ''}{'; '.join(refused)})")

    x = torch.randn(B * T, C, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4 * C, C, device="cuda", dtype=torch.bfloat16) * 0.02
    b = torch.randn(4 * C, device="cuda", dtype=torch.bfloat16) * 0.02
    with torch.no_grad():
        two = F.gelu(F.linear(x, w, b), approximate="tanh")
        one = torch._addmm_activation(b, x, w.t(), use_gelu=True)
        differs = (two.float() - one.float()).abs().max().item()
        times = alternating({"two_ops": lambda: F.gelu(F.linear(x, w, b), approximate="tanh"),
                             "epilogue": lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)})
    print("lever_gelu_ms " + " ".join(f"{n} {1e3 * t:.3f}" for n, t in times.items()) +
          f" (one layer's c_fc and tanh GELU, forward, {B * T} x {C} -> {4 * C}, bf16; "
          f"largest difference {differs:.3g})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("versions").set_defaults(run=versions)
    sub.add_parser("peak").set_defaults(run=peak)
    g = sub.add_parser("generate")
    g.add_argument("--new-tokens", type=int, default=128)
    g.add_argument("--prompt-tokens", type=int, default=16)
    g.set_defaults(run=generate)
    lv = sub.add_parser("levers")
    lv.add_argument("--batch", type=int, default=32)
    lv.set_defaults(run=levers)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
