"""nanoGPT's own ckpt.pt, both ways, against the C++ library.

The model, optimizer set-up, learning-rate schedule and checkpoint dict are
nanoGPT's (model.py, train.py), written again here in plain torch so that
the test needs nothing but Debian's python3-torch (1.13 or 2.x). The model
keeps no causal-mask buffer in its state dict, as nanoGPT's on torch >= 2.0
(flash attention), which nanoGPT requires.

  nanogpt_ckpt.py write DIR   trains a small model a few steps and saves
      DIR/ckpt.pt          exactly train.py's dict (model, optimizer,
                           model_args, iter_num, best_val_loss, config)
      DIR/ckpt_compiled.pt the same with '_orig_mod.' names (torch.compile)
      DIR/ckpt_mask.pt     the same with the attn.bias mask buffers
                           (nanoGPT's model on torch < 2.0)
      DIR/expected.safetensors  tokens, logits, x, y, loss_before and
                           loss_after (one more train.py step on (x, y))
      DIR/hostile_*.pt     files the library must refuse with typed errors,
                           running nothing: a __reduce__ that would run a
                           command (creating DIR/pwned), an unknown global,
                           a truncated archive, a dict without model_args,
                           model_args whose n_embd the tensors do not fit,
                           model_args whose n_embd is a str
  nanogpt_ckpt.py check DIR CKPT  loads CKPT (written by the library) with
      torch.load(weights_only=True), resumes as train.py does, takes the
      step on (x, y) and compares its loss with expected's loss_after.
      torch 1.13's weights_only reader has no BINFLOAT opcode, so it refuses
      any pickle holding a float (nanoGPT's own ckpt.pt too); there the
      script checks what that reader checks, the globals, and loads with
      weights_only=False.
  nanogpt_ckpt.py inspect CKPT ITER  loads CKPT as train.py's resume does
      (strict state dict, optimizer state) and checks iter_num and every
      AdamW step count equal ITER.
  nanogpt_ckpt.py data DIR CORPUS  writes DIR/data/shakespeare_char as
      nanoGPT's data/shakespeare_char/prepare.py leaves it (train.bin,
      val.bin, meta.pkl by pickle.dump; no meta.json), over CORPUS and, after
      it, characters beyond ASCII enough for MODEL_ARGS' 96 ids.
  nanogpt_ckpt.py prepared DIR CORPUS  checks that DIR (`gpt2 prepare
      --tokenizer char --format nanogpt` of CORPUS) holds byte for byte the
      train.bin and val.bin nanoGPT's prepare.py writes, and a meta.pkl that
      pickle.load reads as its dict.
  nanogpt_ckpt.py sample CKPT DIR  does what nanoGPT's sample.py does before
      it samples: finds DIR/data/<config['dataset']>/meta.pkl, checks its
      vocabulary is the model's, and decodes a greedy continuation with it.
"""
import array
import datetime
import json
import math
import os
import pickle
import pickletools
import struct
import sys
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_ARGS = dict(n_layer=2, n_head=4, n_embd=32, block_size=16, bias=True, vocab_size=96,
                  dropout=0.0)
CONFIG = dict(out_dir="out", eval_interval=2000, log_interval=1, eval_iters=200,
              eval_only=False, always_save_checkpoint=True, init_from="scratch",
              wandb_log=False, wandb_project="owt", wandb_run_name="gpt2", dataset="shakespeare_char",
              gradient_accumulation_steps=1, batch_size=4, block_size=16, n_layer=2, n_head=4,
              n_embd=32, dropout=0.0, bias=True, learning_rate=1e-2, max_iters=100,
              weight_decay=1e-1, beta1=0.9, beta2=0.95, grad_clip=1.0, decay_lr=True,
              warmup_iters=3, lr_decay_iters=50, min_lr=1e-3, backend="nccl", device="cpu",
              dtype="float32", compile=False)
STEPS = 5  # iter_num of the saved checkpoint


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, a, mask):
        super().__init__()
        self.c_attn = nn.Linear(a["n_embd"], 3 * a["n_embd"], bias=a["bias"])
        self.c_proj = nn.Linear(a["n_embd"], a["n_embd"], bias=a["bias"])
        self.n_head, self.n_embd = a["n_head"], a["n_embd"]
        T = a["block_size"]
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T),
                             persistent=mask)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, a, mask):
        super().__init__()
        self.ln_1 = LayerNorm(a["n_embd"], a["bias"])
        self.attn = CausalSelfAttention(a, mask)
        self.ln_2 = LayerNorm(a["n_embd"], a["bias"])
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(a["n_embd"], 4 * a["n_embd"], bias=a["bias"])
        self.mlp.gelu = nn.GELU()
        self.mlp.c_proj = nn.Linear(4 * a["n_embd"], a["n_embd"], bias=a["bias"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = self.mlp.c_proj(self.mlp.gelu(self.mlp.c_fc(self.ln_2(x))))
        return x + h


class GPT(nn.Module):
    def __init__(self, a, mask=False):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(a["vocab_size"], a["n_embd"]),
            wpe=nn.Embedding(a["block_size"], a["n_embd"]),
            h=nn.ModuleList([Block(a, mask) for _ in range(a["n_layer"])]),
            ln_f=LayerNorm(a["n_embd"], a["bias"])))
        self.lm_head = nn.Linear(a["n_embd"], a["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        g = torch.Generator().manual_seed(1)
        for pn, p in self.named_parameters():  # random everywhere: a misplaced tensor shows
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * (0.02 if p.dim() >= 2 else 0.1))
                if ".ln_" in pn and pn.endswith("weight") or pn.endswith("ln_f.weight"):
                    p.add_(1.0)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        groups = [{"params": [p for p in params.values() if p.dim() >= 2],
                   "weight_decay": weight_decay},
                  {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)


def get_lr(it, c):
    if it < c["warmup_iters"]:
        return c["learning_rate"] * (it + 1) / (c["warmup_iters"] + 1)
    if it > c["lr_decay_iters"]:
        return c["min_lr"]
    ratio = (it - c["warmup_iters"]) / (c["lr_decay_iters"] - c["warmup_iters"])
    return c["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (c["learning_rate"] - c["min_lr"])


def train_step(model, optimizer, it, c, x, y):
    """One train.py iteration (gradient_accumulation_steps 1, float32)."""
    for group in optimizer.param_groups:
        group["lr"] = get_lr(it, c)
    loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(MODEL_ARGS["vocab_size"], (CONFIG["batch_size"], 17), generator=g)
    return data[:, :16].contiguous(), data[:, 1:].contiguous()


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def save(model, optimizer, path, prefix="", mask=False):
    sd = model.state_dict()
    if mask:  # nanoGPT on torch < 2.0 keeps the causal mask in its state dict
        T = MODEL_ARGS["block_size"]
        for i in range(MODEL_ARGS["n_layer"]):
            sd[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
    if prefix:  # what torch.compile's OptimizedModule.state_dict() returns
        meta = sd._metadata
        sd = type(sd)((prefix + k, v) for k, v in sd.items())
        sd._metadata = type(meta)((prefix + k if k else prefix[:-1], v) for k, v in meta.items())
        sd._metadata[""] = {"version": 1}
    torch.save({"model": sd, "optimizer": optimizer.state_dict(), "model_args": dict(MODEL_ARGS),
                "iter_num": STEPS, "best_val_loss": torch.tensor(4.25), "config": dict(CONFIG)},
               path)


class Hostile:
    """Unpickling this runs a shell command: the reader must not."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_hostile(folder, model):
    sd = model.state_dict()
    good = {"model": sd, "model_args": dict(MODEL_ARGS), "iter_num": 0}
    torch.save(dict(good, config=Hostile(os.path.join(folder, "pwned"))),
               os.path.join(folder, "hostile_reduce.pt"))
    torch.save(dict(good, config={"when": datetime.date(2024, 1, 1)}),
               os.path.join(folder, "hostile_global.pt"))
    torch.save({"model": sd, "iter_num": 0}, os.path.join(folder, "hostile_missing.pt"))
    torch.save(dict(good, model_args=dict(MODEL_ARGS, n_embd=16)),
               os.path.join(folder, "hostile_shape.pt"))
    torch.save(dict(good, model_args=dict(MODEL_ARGS, n_embd="32")),
               os.path.join(folder, "hostile_mistyped.pt"))
    with open(os.path.join(folder, "ckpt.pt"), "rb") as f:
        data = f.read()
    with open(os.path.join(folder, "hostile_truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])


def write(folder):
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(0)
    model = GPT(MODEL_ARGS)
    optimizer = model.configure_optimizers(CONFIG["weight_decay"], CONFIG["learning_rate"],
                                           (CONFIG["beta1"], CONFIG["beta2"]))
    for it in range(STEPS):
        train_step(model, optimizer, it, CONFIG, *batch(100 + it))
    save(model, optimizer, os.path.join(folder, "ckpt.pt"))
    save(model, optimizer, os.path.join(folder, "ckpt_compiled.pt"), prefix="_orig_mod.")
    save(model, optimizer, os.path.join(folder, "ckpt_mask.pt"), mask=True)
    if os.path.exists(os.path.join(folder, "pwned")):
        os.remove(os.path.join(folder, "pwned"))
    write_hostile(folder, model)
    tokens = batch(7)[0][:2, :12]
    x, y = batch(200)
    with torch.no_grad():
        logits = model(tokens)
        loss_before = model(x, y)
    loss_after_step = train_step(model, optimizer, STEPS, CONFIG, x, y)
    with torch.no_grad():
        loss_after = model(x, y)
    assert abs(loss_after_step - loss_before.item()) < 1e-6
    write_safetensors(os.path.join(folder, "expected.safetensors"), {
        "tokens": tokens.float(), "logits": logits, "x": x.float(), "y": y.float(),
        "loss_before": loss_before.reshape(1), "loss_after": loss_after.reshape(1)})
    print(f"wrote {folder}: torch {torch.__version__}, loss {loss_before.item():.6f} -> "
          f"{loss_after.item():.6f} after step {STEPS}")


def read_expected(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = json.loads(f.read(n)), f.read()
    out = {}
    for name, e in header.items():
        a, b = e["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).view(e["shape"])
    return out


ALLOWED_GLOBALS = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2"} | {
    f"torch {t}Storage" for t in ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Byte",
                                  "Bool")}


def load_weights_only(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # torch 1.13's reader lacks BINFLOAT (opcode 71); any other refusal fails.
        if not torch.__version__.startswith("1.") or "Unsupported operand 71" not in str(e):
            raise
    with zipfile.ZipFile(path) as z:
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")]
        assert len(pkl) == 1, z.namelist()
        for op, arg, _ in pickletools.genops(z.read(pkl[0])):
            assert op.name != "GLOBAL" or arg in ALLOWED_GLOBALS, f"{path} names global {arg}"
            assert op.name not in ("INST", "OBJ", "NEWOBJ", "STACK_GLOBAL"), op.name
    print(f"torch {torch.__version__}: weights_only has no BINFLOAT; globals checked instead")
    return torch.load(path, map_location="cpu")


def check(folder, path):
    e = read_expected(os.path.join(folder, "expected.safetensors"))
    ckpt = load_weights_only(path)
    missing = {"model", "optimizer", "model_args", "iter_num", "best_val_loss", "config"} - set(ckpt)
    assert not missing, f"{path} lacks {missing}"
    args = ckpt["model_args"]
    for k in ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size"):
        assert args[k] == MODEL_ARGS[k], f"model_args[{k!r}] = {args[k]!r}"
    sd = ckpt["model"]
    assert sd["lm_head.weight"].data_ptr() == sd["transformer.wte.weight"].data_ptr(), \
        "the tied matrix is two storages in the file"
    model = GPT(args)
    model.load_state_dict(sd)  # strict, as train.py's resume
    config = ckpt["config"]
    optimizer = model.configure_optimizers(config["weight_decay"], config["learning_rate"],
                                           (config["beta1"], config["beta2"]))
    optimizer.load_state_dict(ckpt["optimizer"])
    it = ckpt["iter_num"]
    x, y = e["x"].long(), e["y"].long()
    with torch.no_grad():
        before = model(x, y).item()
    train_step(model, optimizer, it, config, x, y)
    with torch.no_grad():
        after = model(x, y).item()
    want = e["loss_after"].item()
    # Both sides run float32 AdamW from the same state; the losses differ by
    # float rounding in different op orders, about 1e-7 here.
    print(f"check {path}: torch {torch.__version__}, iter_num {it}, loss {before:.6f} -> "
          f"{after:.6f}, expected {want:.6f}, |diff| {abs(after - want):.3g} (bound 1e-5)")
    assert abs(after - want) < 1e-5 and abs(before - e["loss_before"].item()) < 1e-5


def inspect(path, iters):
    ckpt = load_weights_only(path)
    model = GPT(ckpt["model_args"])
    model.load_state_dict(ckpt["model"])
    c = ckpt["config"]  # empty for a bare model: train.py's resume does not read it
    optimizer = model.configure_optimizers(c.get("weight_decay", 0.1),
                                           c.get("learning_rate", 6e-4),
                                           (c.get("beta1", 0.9), c.get("beta2", 0.95)))
    optimizer.load_state_dict(ckpt["optimizer"])
    steps = {float(s["step"]) for s in optimizer.state.values()}
    assert ckpt["iter_num"] == int(iters) and steps <= {float(iters)}, (ckpt["iter_num"], steps)
    assert len(optimizer.state) in (0, sum(1 for _ in model.parameters())), len(optimizer.state)
    print(f"inspect {path}: iter_num {ckpt['iter_num']}, {len(optimizer.state)} AdamW states")


def nanogpt_prepare(text):
    """nanoGPT's data/shakespeare_char/prepare.py on `text`: (train ids, val ids, meta)."""
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    n = len(text)
    train = [stoi[c] for c in text[:int(n * 0.9)]]
    val = [stoi[c] for c in text[int(n * 0.9):]]
    return train, val, {"vocab_size": len(chars), "itos": itos, "stoi": stoi}


def uint16_bytes(ids):
    return array.array("H", ids).tobytes()  # np.array(ids, dtype=np.uint16).tofile: native order


def data(folder, corpus):
    with open(corpus, encoding="utf-8") as f:
        text = f.read()
    need = MODEL_ARGS["vocab_size"] - len(set(text))
    text += "".join([chr(c) for c in range(0xC0, 0x250) if chr(c) not in text][:need])
    train, val, meta = nanogpt_prepare(text)
    assert meta["vocab_size"] == MODEL_ARGS["vocab_size"], meta["vocab_size"]
    out = os.path.join(folder, "data", CONFIG["dataset"])
    os.makedirs(out, exist_ok=True)
    for name, ids in (("train.bin", train), ("val.bin", val)):
        with open(os.path.join(out, name), "wb") as f:
            f.write(uint16_bytes(ids))
    with open(os.path.join(out, "meta.pkl"), "wb") as f:
        pickle.dump(meta, f)
    print(f"wrote {out}: {len(train)} train and {len(val)} val ids, {meta['vocab_size']} characters")


def prepared(folder, corpus):
    with open(corpus, encoding="utf-8") as f:
        train, val, meta = nanogpt_prepare(f.read())
    for name, ids in (("train.bin", train), ("val.bin", val)):
        with open(os.path.join(folder, name), "rb") as f:
            assert f.read() == uint16_bytes(ids), f"{name} is not nanoGPT's"
    with open(os.path.join(folder, "meta.pkl"), "rb") as f:
        got = pickle.load(f)
    assert got == meta, f"meta.pkl holds {got!r}"
    print(f"prepared {folder}: train.bin, val.bin and meta.pkl are nanoGPT's ({meta['vocab_size']} ids)")


def sample(path, folder):
    ckpt = load_weights_only(path)
    dataset = ckpt["config"]["dataset"]  # a KeyError here: sample.py falls back to GPT-2's BPE
    with open(os.path.join(folder, "data", dataset, "meta.pkl"), "rb") as f:
        meta = pickle.load(f)
    assert meta["vocab_size"] == ckpt["model_args"]["vocab_size"], (meta["vocab_size"],
                                                                    ckpt["model_args"])
    model = GPT(ckpt["model_args"])
    model.load_state_dict(ckpt["model"])
    idx = torch.tensor([[meta["stoi"]["\n"]]])
    with torch.no_grad():
        for _ in range(20):
            idx = torch.cat([idx, model(idx[:, -16:])[:, -1:].argmax(-1)], dim=1)
    text = "".join(meta["itos"][i] for i in idx[0].tolist())
    print(f"sample {path}: dataset {dataset!r}, {meta['vocab_size']} characters, {text!r}")


if __name__ == "__main__":
    {"write": write, "check": check, "inspect": inspect, "data": data, "prepared": prepared,
     "sample": sample}[sys.argv[1]](*sys.argv[2:])
