#include "gpt2/io/checkpoint.h"

#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "gpt2/file/atomic_file.h"
#include "gpt2/io/detail/host_tensor.h"

namespace gpt2 {
namespace {

using torch::jit::CompilationUnit;
using torch::jit::Module;

// A module holding `weight` and, if defined, `bias`.
Module leaf(const std::shared_ptr<CompilationUnit>& cu, const char* type,
            const torch::Tensor& weight, const torch::Tensor& bias = {}) {
  Module m(fmt::format("__torch__.gpt2.{}", type), cu, /*shouldMangle=*/true);
  m.register_parameter("weight", weight, /*is_buffer=*/false);
  if (bias.defined()) m.register_parameter("bias", bias, /*is_buffer=*/false);
  return m;
}

Module linear(const std::shared_ptr<CompilationUnit>& cu, const LinearImpl& l) {
  return leaf(cu, "Linear", l.weight, l.bias);
}

Module layer_norm(const std::shared_ptr<CompilationUnit>& cu, const LayerNormImpl& n) {
  return leaf(cu, "LayerNorm", n.weight, n.bias);
}

// `self.<path>.bias` when `bias` is defined, else `None`.
std::string bias_of(const torch::Tensor& bias, const char* path) {
  return bias.defined() ? fmt::format("self.{}.bias", path) : std::string("None");
}

// Block i's forward, as nanoGPT's Block / CausalSelfAttention / MLP without
// dropout. Every constant (LayerNorm eps, biases, heads, GELU) is read from
// the block's own modules.
std::string block_source(const BlockImpl& block) {
  const auto& attn = *block.attn;
  const auto& mlp = *block.mlp;
  const int64_t nh = attn.config.n_head(), hs = attn.config.n_embd() / nh;
  return fmt::format(R"py(
def forward(self, x: Tensor) -> Tensor:
    B = x.size(0)
    T = x.size(1)
    C = x.size(2)
    h = torch.layer_norm(x, [C], self.ln_1.weight, {ln_1}, {eps_1:.17g})
    qkv = torch.linear(h, self.attn.c_attn.weight, {c_attn}).split(C, 2)
    q = qkv[0].view(B, T, {nh}, {hs}).transpose(1, 2)
    k = qkv[1].view(B, T, {nh}, {hs}).transpose(1, 2)
    v = qkv[2].view(B, T, {nh}, {hs}).transpose(1, 2)
    att = torch.matmul(q, k.transpose(-2, -1)) * {scale:.17g}
    pos = torch.arange(T, device=x.device)
    future = pos.unsqueeze(0) > pos.unsqueeze(1)
    att = torch.softmax(att.masked_fill(future, float("-inf")), -1)
    y = torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, C)
    x = x + torch.linear(y, self.attn.c_proj.weight, {attn_proj})
    h = torch.layer_norm(x, [C], self.ln_2.weight, {ln_2}, {eps_2:.17g})
    h = torch.gelu(torch.linear(h, self.mlp.c_fc.weight, {c_fc}), approximate="{gelu}")
    return x + torch.linear(h, self.mlp.c_proj.weight, {mlp_proj})
)py",
      fmt::arg("ln_1", bias_of(block.ln_1->bias, "ln_1")),
      fmt::arg("eps_1", block.ln_1->options.eps()),
      fmt::arg("c_attn", bias_of(attn.c_attn->bias, "attn.c_attn")), fmt::arg("nh", nh),
      fmt::arg("hs", hs), fmt::arg("scale", 1.0 / std::sqrt(static_cast<double>(hs))),
      fmt::arg("attn_proj", bias_of(attn.c_proj->bias, "attn.c_proj")),
      fmt::arg("ln_2", bias_of(block.ln_2->bias, "ln_2")),
      fmt::arg("eps_2", block.ln_2->options.eps()),
      fmt::arg("c_fc", bias_of(mlp.c_fc->bias, "mlp.c_fc")),
      fmt::arg("mlp_proj", bias_of(mlp.c_proj->bias, "mlp.c_proj")),
      fmt::arg("gelu", torch_gelu_approximate(mlp.config.gelu())));
}

std::string blocks_source(int64_t n_layer) {
  std::string body;
  for (int64_t i = 0; i < n_layer; ++i) {
    body += fmt::format("    x = getattr(self, \"{}\").forward(x)\n", i);
  }
  return "\ndef forward(self, x: Tensor) -> Tensor:\n" + body + "    return x\n";
}

std::string gpt_source(const GPTImpl& model) {
  const GPTConfig& c = model.config;
  const LayerNormImpl& ln_f = *model.transformer->ln_f;
  return fmt::format(R"py(
def forward(self, idx: Tensor) -> Tensor:
    assert idx.dim() == 2, "idx must be a 2-D (B, T) int64 tensor"
    T = idx.size(1)
    assert T >= 1 and T <= {block_size}, "sequence length " + str(T) + " is outside [1, {block_size}]"
    assert not bool(((idx < 0) | (idx >= {vocab})).any()), "a token id is outside the vocabulary [0, {vocab})"
    pos = torch.arange(T, device=idx.device)
    x = torch.embedding(self.transformer.wte.weight, idx) + torch.embedding(self.transformer.wpe.weight, pos)
    x = self.transformer.h.forward(x)
    x = torch.layer_norm(x, [{n_embd}], self.transformer.ln_f.weight, {ln_f_bias}, {eps:.17g})
    return torch.linear(x, self.lm_head.weight)
)py",
      fmt::arg("block_size", c.block_size()), fmt::arg("vocab", c.vocab_size()),
      fmt::arg("n_embd", c.n_embd()),
      fmt::arg("ln_f_bias", bias_of(ln_f.bias, "transformer.ln_f")),
      fmt::arg("eps", ln_f.options.eps()));
}

}  // namespace

Module to_torchscript(const GPTImpl& model) {
  const GPTConfig& c = model.config;
  auto cu = std::make_shared<CompilationUnit>();
  Module h("__torch__.gpt2.Blocks", cu, true);
  for (int64_t i = 0; i < c.n_layer(); ++i) {
    const BlockImpl& src = *model.block(i);
    Module block("__torch__.gpt2.Block", cu, true);
    block.register_module("ln_1", layer_norm(cu, *src.ln_1));
    Module attn("__torch__.gpt2.CausalSelfAttention", cu, true);
    attn.register_module("c_attn", linear(cu, *src.attn->c_attn));
    attn.register_module("c_proj", linear(cu, *src.attn->c_proj));
    block.register_module("attn", attn);
    block.register_module("ln_2", layer_norm(cu, *src.ln_2));
    Module mlp("__torch__.gpt2.MLP", cu, true);
    mlp.register_module("c_fc", linear(cu, *src.mlp->c_fc));
    mlp.register_module("c_proj", linear(cu, *src.mlp->c_proj));
    block.register_module("mlp", mlp);
    block.define(block_source(src));
    h.register_module(std::to_string(i), block);
  }
  h.define(blocks_source(c.n_layer()));

  const auto& t = *model.transformer;
  Module transformer("__torch__.gpt2.Transformer", cu, true);
  transformer.register_module("wte", leaf(cu, "Embedding", t.wte->weight));
  transformer.register_module("wpe", leaf(cu, "Embedding", t.wpe->weight));
  transformer.register_module("h", h);
  transformer.register_module("ln_f", layer_norm(cu, *t.ln_f));

  Module root("__torch__.gpt2.GPT", cu, true);
  root.register_module("transformer", transformer);
  // The same tensor as wte's weight: saved once, loaded as one.
  root.register_module("lm_head", leaf(cu, "Linear", model.lm_head->weight));
  root.define(gpt_source(model));
  root.eval();
  return root;
}

void export_torchscript(const GPTImpl& model, const std::string& path) {
  // A program of CPU tensors wherever the model runs, so it loads anywhere.
  const detail::HostModel host(model, fmt::format("TorchScript program '{}'", path));
  Module program = to_torchscript(*host);
  write_atomically(path, [&program](std::ostream& out) { program.save(out); });
}

}  // namespace gpt2
