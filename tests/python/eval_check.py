"""`gpt2 eval` against scores computed here, in plain torch (Debian's python3-torch).

The model's logits come from interop_test.gpt2_forward over the checkpoint's
state dict, not from the library; the token ids from `gpt2 tokenize` (whose
exactness against GPT-2's tokenizer is tested elsewhere).

- --text: Hugging Face's strided loop ("Perplexity of fixed-length models"),
  written out as that page does: windows of max_length tokens every stride
  tokens, each scoring only its last end - prev_end targets. Checked for a
  stride equal to the block and one smaller, within 1e-4 relative.
- --choices: each ending after the context and a space, summed and mean
  losses, acc and acc_norm counts equal.

Usage: /usr/bin/python3 eval_check.py GPT2 CHECKPOINT TEXT CHOICES WORKDIR
"""
import json
import math
import os
import re
import subprocess
import sys

import torch
import torch.nn.functional as F

GPT2, CHECKPOINT, TEXT, CHOICES, WORK = sys.argv[1:6]
del sys.argv[1:]  # interop_test reads its own argument at import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_test import gpt2_forward  # noqa: E402
os.makedirs(WORK, exist_ok=True)

module = torch.jit.load(CHECKPOINT)
meta = module.gpt2
SD = module.state_dict()
BLOCK = meta.block_size


def logits_of(ids):
    with torch.no_grad():
        return gpt2_forward(SD, torch.tensor([ids]), meta.n_layer, meta.n_head, meta.gelu)[0]


def tokenize(text, name):
    path = os.path.join(WORK, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    out = subprocess.run([GPT2, "tokenize", path], check=True, capture_output=True, text=True)
    return [int(t) for t in out.stdout.split()]


def gpt2_eval(*args):
    out = subprocess.run([GPT2, "eval", "--model", CHECKPOINT, *args], check=True,
                         capture_output=True, text=True).stdout
    print(out, end="")
    return out


def hf_strided_nll(ids, max_length, stride):
    """Summed nll and the count of scored tokens, by Hugging Face's loop."""
    nll, count, prev_end = 0.0, 0, 0
    for begin in range(0, len(ids), stride):
        end = min(begin + max_length, len(ids))
        trg_len = end - prev_end  # may differ from stride on the last window
        window = ids[begin:end]
        targets = list(window)
        for i in range(len(targets) - trg_len):
            targets[i] = -100
        logits = logits_of(window)
        # The label of position i is the token at i + 1, as HF's shift.
        shifted = torch.tensor(targets[1:])
        nll += F.cross_entropy(logits[:-1].double(), shifted, ignore_index=-100,
                               reduction="sum").item()
        count += int((shifted != -100).sum())
        prev_end = end
        if end == len(ids):
            break
    return nll, count


text = open(TEXT, encoding="utf-8").read()
ids = tokenize(text, "text.txt")
assert len(ids) > 2 * BLOCK, f"the text has {len(ids)} tokens; the check needs several windows"
for stride in (BLOCK, BLOCK // 4):
    out = gpt2_eval("--text", TEXT, "--stride", str(stride))
    got_tokens = int(re.search(r"^scored +(\d+) tokens", out, re.M).group(1))
    got_loss = float(re.search(r"^loss +([0-9.]+) nats", out, re.M).group(1))
    nll, count = hf_strided_nll(ids, BLOCK, stride)
    want = nll / count
    print(f"stride {stride}: {count} tokens, mean nll here {want:.6f}, gpt2 eval {got_loss:.6f}")
    assert got_tokens == count, (got_tokens, count)
    assert abs(got_loss - want) <= 1e-4 * want, (got_loss, want)

correct = correct_norm = 0
items = [json.loads(line) for line in open(CHOICES, encoding="utf-8") if line.strip()]
# Every context and " " + ending in one `gpt2 tokenize` call, one per line:
# GPT-2's pre-tokenizer keeps a lone "\n" (id 198) apart from its neighbours.
pieces = [p for item in items for p in [item["ctx"]] + [" " + e for e in item["endings"]]]
assert not any("\n" in p for p in pieces)
joined, part = tokenize("\n".join(pieces), "choices.txt"), []
tokens = []
for t in joined + [198]:
    if t == 198:
        tokens.append(part)
        part = []
    else:
        part.append(t)
assert len(tokens) == len(pieces), (len(tokens), len(pieces))
for item in items:
    ctx = tokens.pop(0)
    sums, means = [], []
    for ending in item["endings"]:
        end = tokens.pop(0)
        row = ctx + end
        logits = logits_of(row[:-1])
        losses = F.cross_entropy(logits[len(ctx) - 1:].double(), torch.tensor(end),
                                 reduction="none")
        sums.append(losses.sum().item())
        means.append(losses.mean().item())
    correct += min(range(len(sums)), key=sums.__getitem__) == item["label"]
    correct_norm += min(range(len(means)), key=means.__getitem__) == item["label"]
out = gpt2_eval("--choices", CHOICES)
got = re.search(r"^acc +[0-9.]+ \((\d+) of (\d+)", out, re.M).groups()
got_norm = re.search(r"^acc_norm +[0-9.]+ \((\d+) of (\d+)", out, re.M).groups()
print(f"choices here: acc {correct} of {len(items)}, acc_norm {correct_norm} of {len(items)}")
assert (int(got[0]), int(got[1])) == (correct, len(items)), got
assert (int(got_norm[0]), int(got_norm[1])) == (correct_norm, len(items)), got_norm
print("gpt2 eval matches the strided perplexity and the choice scores computed in Python")
