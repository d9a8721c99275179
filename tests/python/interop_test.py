"""Python as a second client of gpt2's files, with Debian's python3-torch.

Reads the checkpoint and the exported program that make_fixtures wrote with
the C++ library, and checks them against a GPT-2 forward written here in
plain torch ops (nanoGPT's model.py, without modules); and the files each
LibTorch release wrote (tests/io/release_files).

Usage: /usr/bin/python3 interop_test.py FIXTURE_FOLDER
"""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

FIXTURES = sys.argv.pop(1) if len(sys.argv) > 1 else "."


def nanogpt_names(n_layer):
    names = ["transformer.wte.weight", "transformer.wpe.weight"]
    for i in range(n_layer):
        for leaf in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                     "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                     "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"):
            names.append(f"transformer.h.{i}.{leaf}")
    return names + ["transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"]


# The checkpoint's GELU names (the library's one spelling) and the
# `approximate` argument torch's gelu takes for each.
TORCH_GELU = {"tanh": "tanh", "exact": "none"}


def gpt2_forward(sd, idx, n_layer, n_head, gelu):
    """GPT-2 logits from a state dict: idx (B, T) -> (B, T, vocab).

    gelu is the checkpoint's name ("tanh" or "exact"); biases missing from
    the state dict (a no-bias model) are left out."""
    sd = dict(sd)
    approximate = TORCH_GELU[gelu]
    B, T = idx.shape
    x = sd["transformer.wte.weight"][idx] + sd["transformer.wpe.weight"][:T]
    C = x.shape[-1]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(n_layer):
        p = lambda name: sd.get(f"transformer.h.{i}.{name}")
        h = F.layer_norm(x, (C,), p("ln_1.weight"), p("ln_1.bias"), 1e-5)
        q, k, v = F.linear(h, p("attn.c_attn.weight"), p("attn.c_attn.bias")).split(C, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // n_head)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p("attn.c_proj.weight"), p("attn.c_proj.bias"))
        h = F.layer_norm(x, (C,), p("ln_2.weight"), p("ln_2.bias"), 1e-5)
        h = F.gelu(F.linear(h, p("mlp.c_fc.weight"), p("mlp.c_fc.bias")), approximate=approximate)
        x = x + F.linear(h, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))
    x = F.layer_norm(x, (C,), sd["transformer.ln_f.weight"], sd.get("transformer.ln_f.bias"), 1e-5)
    return x @ sd["lm_head.weight"].T


class Interop(unittest.TestCase):
    """The 12-layer gpt2-shaped fixtures: tanh GELU, biases."""
    FOLDER = "gpt2"

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(FIXTURES, cls.FOLDER)
        cls.checkpoint = torch.jit.load(os.path.join(cls.dir, "checkpoint.pt"))
        tokens, logits = torch.load(os.path.join(cls.dir, "expected.pt"), weights_only=True)
        cls.expected = {"tokens": tokens, "logits": logits}

    def test_checkpoint_state_dict_has_nanogpt_names_and_one_tied_tensor(self):
        sd = self.checkpoint.state_dict()
        self.assertEqual(list(sd.keys()), nanogpt_names(12))
        self.assertEqual(len(sd), 149)
        self.assertEqual(sd["lm_head.weight"].data_ptr(), sd["transformer.wte.weight"].data_ptr())

    def test_checkpoint_config_is_readable(self):
        meta = self.checkpoint.gpt2
        self.assertEqual((meta.n_layer, meta.n_head, meta.n_embd, meta.vocab_size),
                         (12, 4, 64, 50257))
        self.assertEqual(meta.init_residual, "2n")

    def test_plain_torch_forward_over_checkpoint_matches_cpp_logits(self):
        meta = self.checkpoint.gpt2
        with torch.no_grad():
            logits = gpt2_forward(self.checkpoint.state_dict(), self.expected["tokens"],
                                  meta.n_layer, meta.n_head, meta.gelu)
        diff = (logits - self.expected["logits"]).abs().max().item()
        print(f"\nplain-torch forward vs C++: max abs diff {diff:.3g}")
        self.assertLess(diff, 1e-5)

    def test_exported_program_runs_and_matches_cpp_logits(self):
        program = torch.jit.load(os.path.join(self.dir, "program.ts"))
        sd = program.state_dict()
        self.assertEqual(sd["lm_head.weight"].data_ptr(), sd["transformer.wte.weight"].data_ptr())
        with torch.no_grad():
            logits = program(self.expected["tokens"])
        diff = (logits - self.expected["logits"]).abs().max().item()
        print(f"\nexported program vs C++: max abs diff {diff:.3g}")
        self.assertLess(diff, 1e-5)


class InteropExactGeluNoBias(Interop):
    """3 layers, erf GELU, no biases: the forward's other branches."""
    FOLDER = "exact_nobias"

    def test_checkpoint_state_dict_has_nanogpt_names_and_one_tied_tensor(self):
        sd = self.checkpoint.state_dict()
        self.assertEqual(list(sd.keys()),
                         [n for n in nanogpt_names(3) if not n.endswith(".bias")])
        self.assertEqual(sd["lm_head.weight"].data_ptr(), sd["transformer.wte.weight"].data_ptr())

    def test_checkpoint_config_is_readable(self):
        meta = self.checkpoint.gpt2
        self.assertEqual((meta.n_layer, meta.gelu, meta.bias), (3, "exact", False))


RELEASE_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io",
                             "release_files")


class ReleaseFiles(unittest.TestCase):
    """The files each LibTorch wrote (tests/io/release_files), read by this torch."""

    def test_every_releases_program_and_checkpoint_read_here(self):
        folders = sorted(os.listdir(RELEASE_FILES))
        self.assertEqual(folders, ["libtorch-1.13.0", "libtorch-2.11.0", "libtorch-2.6.0"])
        for name in folders:
            with self.subTest(name):
                folder = os.path.join(RELEASE_FILES, name)
                tokens, logits, _ = torch.load(os.path.join(folder, "expected.pt"),
                                               weights_only=True)
                program = torch.jit.load(os.path.join(folder, "program.ts"))
                with torch.no_grad():
                    diff = (program(tokens) - logits).abs().max().item()
                self.assertLessEqual(diff, 1e-5)
                sd = torch.jit.load(os.path.join(folder, "checkpoint.pt")).state_dict()
                self.assertEqual(sd["lm_head.weight"].data_ptr(),
                                 sd["transformer.wte.weight"].data_ptr())


if __name__ == "__main__":
    unittest.main(verbosity=2)
