"""The Python peer of `gpt2 bench train`: one GPT-2 training step in plain
torch (Debian's python3-torch, the same LibTorch the C++ library links),
shaped as nanoGPT's model.py and configure_optimizers, timed by phase. Its
attention is nanoGPT's choice: scaled_dot_product_attention where torch has
it (2.x), the explicit masked softmax otherwise (1.13).

Usage: python3 peer_step.py N_LAYER N_HEAD N_EMBD VOCAB BLOCK B T STEPS WARMUP [THREADS]
                           [--device cuda] [--dtype bfloat16] [--compile] [--shipped]
(THREADS: torch intra-op threads; 0 or absent leaves torch's default.) On a
GPU it runs as nanoGPT's train.py does there: the forward under
torch.autocast in --dtype, AdamW(fused=True), torch.compile with --compile;
each phase is timed by events on the device, read once the step is done. --shipped builds the model as
nanoGPT's bench.py ships it: the vocabulary padded to a multiple of 64
(50304 for 50257) and no biases in the Linears and LayerNorms.
Prints one line of JSON: median seconds per phase and peak RSS in bytes.
"""
import contextlib
import ctypes
import json
import math
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# nanoGPT's test for its flash path: torch 2.x has it, 1.13 does not.
FLASH = hasattr(F, "scaled_dot_product_attention")


class LayerNorm(nn.Module):
    """nanoGPT's: a bias only where asked (torch 1.13's has no bias=False)."""

    def __init__(self, n_embd, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n_embd))
        self.bias = nn.Parameter(torch.zeros(n_embd)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Block(nn.Module):
    def __init__(self, n_head, n_embd, bias):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = LayerNorm(n_embd, bias)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.attn_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.mlp_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if FLASH:  # as nanoGPT on torch 2.x: its default path
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:      # nanoGPT's path where torch has no scaled_dot_product_attention (1.13)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(mask[:T, :T] == 0, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, vocab, block, bias=True):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.h = nn.ModuleList(Block(n_head, n_embd, bias) for _ in range(n_layer))
        self.ln_f = LayerNorm(n_embd, bias)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as nanoGPT
        self.register_buffer("mask", torch.tril(torch.ones(block, block)))
        # nanoGPT's _init_weights. Without it wte is N(0, 1) (nn.Embedding's
        # default), the tied head's logits saturate the softmax, and the
        # backward multiplies subnormal floats: 8x slower on x86, which
        # measures the init, not the step.
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for block in self.h:
            for proj in (block.attn_proj, block.mlp_proj):
                nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x, self.mask)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def blas_core():
    """OpenBLAS's kernel set (OPENBLAS_CORETYPE, or what it detected), or "?"."""
    try:
        openblas = ctypes.CDLL("libopenblas.so.0")
        openblas.openblas_get_corename.restype = ctypes.c_char_p
        return openblas.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "?"


def main():
    # The numbers, then the flags: a flag's value (cuda, bfloat16) is no number.
    args = sys.argv[1:]
    first_flag = next((i for i, a in enumerate(args) if a.startswith("--")), len(args))
    positional, flags = args[:first_flag], args[first_flag:]
    n_layer, n_head, n_embd, vocab, block, B, T, steps, warmup = map(int, positional[:9])
    threads = int(positional[9]) if len(positional) > 9 else 0
    device, dtype, compiled = "cpu", "float32", "--compile" in flags
    shipped, ids = "--shipped" in flags, vocab  # the data's ids stay below 50257
    if shipped:  # nanoGPT's bench.py: 50304 for 50257, no biases
        vocab = (vocab + 63) // 64 * 64
    for i, flag in enumerate(flags):
        if flag in ("--device", "--dtype") and i + 1 < len(flags):
            device, dtype = (flags[i + 1], dtype) if flag == "--device" else (device, flags[i + 1])
    if threads > 0:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(n_layer, n_head, n_embd, vocab, block, bias=not shipped).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    cuda = device.startswith("cuda")
    if cuda:  # nanoGPT's train.py
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    fused = {"fused": True} if cuda else {}  # nanoGPT's choice where fused AdamW exists
    opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), **fused)
    step_model = torch.compile(model) if compiled else model
    # nanoGPT's nullcontext for float32: torch 1.13's CPU autocast refuses
    # a float32 dtype even when disabled.
    ctx = (contextlib.nullcontext() if dtype == "float32" else
           torch.autocast(device_type=device.split(":")[0], dtype=getattr(torch, dtype)))
    x = torch.randint(ids, (B, T), device=device)
    y = torch.randint(ids, (B, T), device=device)

    # Phase boundaries as the C++ side takes them (apps/bench/step_phases.h):
    # on a GPU events on the stream, read once the step is done, so no wait
    # on the host falls inside the step; on the CPU the clock.
    def marks():
        if cuda:
            return [torch.cuda.Event(enable_timing=True) for _ in range(6)]
        return [None] * 6

    def mark(events, i):
        if cuda:
            events[i].record()
        else:
            events[i] = time.perf_counter()

    def intervals(events):
        if cuda:
            events[-1].synchronize()
            return [a.elapsed_time(b) / 1000 for a, b in zip(events, events[1:])]
        return [b - a for a, b in zip(events, events[1:])]

    times = {"zero_grad": [], "forward": [], "backward": [], "clip": [], "optimizer": [], "total": []}
    for step in range(warmup + steps):
        start = time.perf_counter()
        events = marks()
        mark(events, 0)
        opt.zero_grad(set_to_none=True)
        mark(events, 1)
        with ctx:
            loss = step_model(x, y)
        mark(events, 2)
        loss.backward()
        mark(events, 3)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        mark(events, 4)
        opt.step()
        mark(events, 5)
        phases = intervals(events)
        total = time.perf_counter() - start
        if step >= warmup:
            for name, dt in zip(times, phases + [total]):
                times[name].append(dt)
    out = {name: statistics.median(v) for name, v in times.items()}
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["threads"] = torch.get_num_threads()
    out["blas_core"] = blas_core()
    out["torch"] = torch.__version__
    out["attention"] = "scaled_dot_product_attention" if FLASH else "explicit"
    out["device"] = str(x.device)
    out["runtime"] = "torch {} on {}, {}{}".format(torch.__version__, device, dtype,
                                                  ", torch.compile" if compiled else ", eager")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
