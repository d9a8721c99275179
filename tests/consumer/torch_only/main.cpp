// Loads an exported gpt2 program with plain LibTorch, checks that its tied
// names share one tensor, and runs it. Exits non-zero on any failure.
#include <torch/script.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: run_exported PROGRAM VOCAB_SIZE\n";
    return 2;
  }
  const int64_t vocab = std::stoll(argv[2]);
  torch::jit::Module program = torch::jit::load(argv[1]);
  const void* head = nullptr;
  const void* wte = nullptr;
  for (const auto& p : program.named_parameters()) {
    if (p.name == "lm_head.weight") head = p.value.data_ptr();
    if (p.name == "transformer.wte.weight") wte = p.value.data_ptr();
  }
  if (head == nullptr || head != wte) {
    std::cerr << "lm_head.weight and transformer.wte.weight do not share storage\n";
    return 1;
  }
  torch::NoGradGuard no_grad;
  for (int64_t t : {1, 3, 9}) {
    auto logits = program.forward({torch::randint(vocab, {2, t})}).toTensor();
    if (logits.sizes() != torch::IntArrayRef({2, t, vocab}) || !logits.isfinite().all().item<bool>()) {
      std::cerr << "bad logits for T " << t << ": " << logits.sizes() << "\n";
      return 1;
    }
  }
  std::cout << "run_exported: tie ok, forward ok for T 1, 3, 9\n";
  return 0;
}
