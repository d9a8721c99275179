"""nanoGPT-shaped models at initialization, for `gpt2 inspect --audit-init`.

  audit_models.py FOLDER   writes, as nanoGPT's train.py saves ckpt.pt:
    init.pt       initialized as nanoGPT does (Linear and Embedding weights
                  N(0, 0.02^2), biases 0, LayerNorm gains 1, then every
                  c_proj.weight N(0, (0.02 / sqrt(2 n_layer))^2)), head tied
    no_scale.pt   the same with the c_proj weights left at N(0, 0.02^2)
    copy_head.pt  the head a copy of wte (its own Parameter), not the same tensor
    trained.pt    init.pt after 5 AdamW steps at lr 1e-2
The model is nanogpt_ckpt.py's (nanoGPT's layout); the init is written here
from the paper's rule, independently of the library.
"""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nanogpt_ckpt as ng  # noqa: E402

ARGS = dict(ng.MODEL_ARGS, n_layer=6, n_embd=64)


def initialized(residual_std):
    torch.manual_seed(1)
    model = ng.GPT(ARGS)
    with torch.no_grad():
        for name, p in model.named_parameters():  # the tied matrix once
            if name.endswith("bias"):
                p.zero_()
            elif ".ln_" in name or name.startswith("transformer.ln_f"):
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                p.normal_(0.0, residual_std)
    return model


def save(model, path):
    torch.save({"model": model.state_dict(), "model_args": dict(ARGS), "iter_num": 0,
                "best_val_loss": 1e9, "config": dict(ng.CONFIG)}, path)


def main(folder):
    os.makedirs(folder, exist_ok=True)
    rule = 0.02 / math.sqrt(2 * ARGS["n_layer"])
    model = initialized(rule)
    save(model, os.path.join(folder, "init.pt"))
    save(initialized(0.02), os.path.join(folder, "no_scale.pt"))
    copy = initialized(rule)
    copy.lm_head.weight = nn.Parameter(copy.transformer.wte.weight.detach().clone())
    save(copy, os.path.join(folder, "copy_head.pt"))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(5):
        x, y = ng.batch(300 + step)
        opt.zero_grad()
        model(x, y).backward()
        opt.step()
    save(model, os.path.join(folder, "trained.pt"))
    print(f"wrote {folder}: init.pt, no_scale.pt, copy_head.pt, trained.pt")


if __name__ == "__main__":
    main(sys.argv[1])
