"""Reads the token shards `gpt2 prepare --format llmc` wrote the way llm.c's
llmc/dataloader.h reads them, with its own code: the 256-int32 header
(magic 20240520, version 1, token count, the file size 1024 + 2 * count),
uint16 tokens, the val shard first, then B * T + 1 windows advancing by
B * T through each shard. The ids are checked against the character
tokenizer written again here (nanoGPT's shakespeare_char: the sorted
distinct characters), so nothing of the library is trusted.

Usage: llmc_shards.py FOLDER TEXT"""
import json
import os
import sys

import numpy as np

folder, text_path = sys.argv[1], sys.argv[2]
with open(text_path, encoding="utf-8") as f:
    text = f.read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
ids = np.array([stoi[c] for c in text], dtype=np.uint16)

with open(os.path.join(folder, "meta.json")) as f:
    meta = json.load(f)
assert meta["format"] == "llmc" and meta["tokenizer"] == "char", meta
assert meta["vocab_size"] == len(chars) and meta["alphabet"] == "".join(chars)
shard_tokens = meta["shard_tokens"]
name = os.path.basename(os.path.normpath(folder))
n_shards = (len(ids) + shard_tokens - 1) // shard_tokens
names = [f"{name}_{'val' if i == 0 else 'train'}_{i:06d}.bin" for i in range(n_shards)]
assert sorted(f for f in os.listdir(folder) if f.endswith(".bin")) == sorted(names), os.listdir(folder)
assert meta["shards"] == n_shards and meta["val_tokens"] == min(shard_tokens, len(ids))
assert meta["train_tokens"] == len(ids) - meta["val_tokens"]

B, T = 4, 64
windows = 0
for i, shard in enumerate(names):
    with open(os.path.join(folder, shard), "rb") as f:
        header = np.frombuffer(f.read(256 * 4), dtype="<i4")
        body = f.read()
    assert header[0] == 20240520, f"{shard}: magic {header[0]}"
    assert header[1] == 1, f"{shard}: version {header[1]}"
    ntok = int(header[2])
    assert len(body) == 2 * ntok, f"{shard}: {ntok} tokens but {len(body)} bytes"
    assert not header[3:].any(), f"{shard}: header past the count is not zero"
    tokens = np.frombuffer(body, dtype="<u2")
    expected = ids[i * shard_tokens:(i + 1) * shard_tokens]
    assert np.array_equal(tokens, expected), f"{shard}: tokens differ"
    pos = 0
    while pos + B * T + 1 <= ntok:  # dataloader_next_batch / dataloader_advance_
        buf = tokens[pos:pos + B * T + 1].astype(np.int64)
        x, y = buf[:-1].reshape(B, T), buf[1:].reshape(B, T)
        start = i * shard_tokens + pos
        assert np.array_equal(x.ravel(), ids[start:start + B * T])
        assert np.array_equal(y.ravel(), ids[start + 1:start + B * T + 1])
        pos += B * T
        windows += 1
print(f"llmc shards ok: {n_shards} shards, {len(ids)} tokens, {windows} windows of {B}x{T}+1")
