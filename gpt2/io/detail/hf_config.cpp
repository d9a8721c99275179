#include "gpt2/io/detail/hf_config.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <utility>

#include "gpt2/error.h"
#include "gpt2/file/json.h"
#include "gpt2/io/hf_gpt2.h"

namespace gpt2 {
namespace detail {

using json = nlohmann::json;

// GPT2Config's activation_function names for the two GELUs.
namespace {

std::optional<Gelu> gelu_from_hf(const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Gelu::kTanh;
  if (name == "gelu") return Gelu::kExact;
  return std::nullopt;
}

}  // namespace

HfConfig parse_config(const std::string& text, std::vector<std::string>& problems) {
  HfConfig c;
  if (text.empty()) return c;
  json j;
  try {
    j = parse_json(text, "config.json");
  } catch (const FormatError& e) {
    problems.push_back(e.what());
    return c;
  }
  if (!j.is_object()) {
    problems.push_back("config.json is not a JSON object");
    return c;
  }
  for (auto [key, field] : {std::pair{"n_head", &c.n_head}, {"n_layer", &c.n_layer},
                            {"n_embd", &c.n_embd}, {"vocab_size", &c.vocab_size},
                            {"n_positions", &c.n_positions}}) {
    if (!j.contains(key)) continue;
    if (j[key].is_number_unsigned() && j[key].get<uint64_t>() <= INT64_MAX) {
      *field = j[key].get<int64_t>();
    } else {
      problems.push_back(fmt::format("config.json {} is {}, not a size", key, j[key].dump()));
    }
  }
  if (j.contains("activation_function")) {
    const json& a = j["activation_function"];
    c.gelu = a.is_string() ? gelu_from_hf(a.get<std::string>()) : std::nullopt;
    if (!c.gelu) problems.push_back(fmt::format("config.json activation_function {} is not a GELU "
                                                "this model has (gelu_new, gelu)", a.dump()));
  }
  return c;
}

}  // namespace detail

std::string hf_config_json(const GPTConfig& c) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["vocab_size"] = c.vocab_size();
  j["n_positions"] = c.block_size();
  j["n_ctx"] = c.block_size();
  j["n_embd"] = c.n_embd();
  j["n_layer"] = c.n_layer();
  j["n_head"] = c.n_head();
  j["activation_function"] = c.gelu() == Gelu::kTanh ? "gelu_new" : "gelu";
  j["resid_pdrop"] = j["embd_pdrop"] = j["attn_pdrop"] = c.dropout();
  j["layer_norm_epsilon"] = 1e-5;
  j["initializer_range"] = c.init().std();
  j["bos_token_id"] = j["eos_token_id"] = c.vocab_size() - 1;
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

}  // namespace gpt2
