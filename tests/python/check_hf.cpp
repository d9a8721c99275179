// Loads the Hugging Face folder hf_write.py wrote with gpt2::load_model and
// compares the model's logits with Python's. Exit 0 when every logit is
// within 1e-5: both sides compute in float32 from the same weights, with
// different operation orders (fused vs unfused attention, Linear vs x @ W),
// so they differ by a few ulps of values near 1, about 1e-7 to 1e-6.
//   check_hf FOLDER
#include <cstdio>
#include <map>

#include "gpt2/io/model_source.h"
#include "gpt2/io/safetensors.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: check_hf FOLDER\n");
    return 2;
  }
  const std::string folder = argv[1];
  gpt2::GPT model = gpt2::load_model(folder);
  model->eval();
  const auto expected = gpt2::read_safetensors(folder + "/expected.safetensors");
  std::map<std::string, torch::Tensor> e(expected.tensors.begin(), expected.tensors.end());
  torch::NoGradGuard no_grad;
  const auto logits = model(e.at("tokens").to(torch::kLong)).logits;
  const double diff = (logits - e.at("logits")).abs().max().item<double>();
  std::printf("check_hf: %s, max |logit difference| %.3g (bound 1e-5)\n",
              gpt2::to_string(model->config).c_str(), diff);
  return diff < 1e-5 ? 0 : 1;
}
