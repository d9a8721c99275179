// Builds a model, checks the tie, runs a forward pass and exports the model
// to the path given as the first argument. Exits non-zero on any failure.
#include <iostream>

#include "gpt2/io/checkpoint.h"
#include "gpt2/model/gpt.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: consumer EXPORT_PATH\n";
    return 2;
  }
  gpt2::GPT model(gpt2::GPTConfig().n_layer(2).n_head(2).n_embd(32).vocab_size(100).block_size(16));
  if (model->lm_head->weight.data_ptr() != model->transformer->wte->weight.data_ptr()) {
    std::cerr << "lm_head.weight and transformer.wte.weight are different tensors\n";
    return 1;
  }
  auto logits = model(torch::randint(100, {1, 8})).logits;  // (1, 8, 100)
  if (logits.sizes() != torch::IntArrayRef({1, 8, 100})) {
    std::cerr << "unexpected logits shape " << logits.sizes() << "\n";
    return 1;
  }
  gpt2::export_torchscript(*model, argv[1]);
  std::cout << "consumer: tie ok, logits " << logits.sizes() << ", exported " << argv[1] << "\n";
  return 0;
}
