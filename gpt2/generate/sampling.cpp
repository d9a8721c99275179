#include "gpt2/generate/generate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gpt2/error.h"
#include "gpt2/generate/detail/to_device.h"

namespace gpt2 {

void validate(const SamplingOptions& o) {
  if (!(o.temperature() >= 0.0) || !std::isfinite(o.temperature())) {
    throw InputError(
        fmt::format("temperature must be a finite number >= 0, got {}", o.temperature()));
  }
  if (o.top_k() && *o.top_k() < 1) {
    throw InputError(fmt::format("top_k must be at least 1, got {}", *o.top_k()));
  }
  if (!(o.top_p() > 0.0 && o.top_p() <= 1.0)) {
    throw InputError(fmt::format("top_p must be in (0, 1], got {}", o.top_p()));
  }
  if (o.max_new_tokens() < 0) {
    throw InputError(fmt::format("max_new_tokens must be >= 0, got {}", o.max_new_tokens()));
  }
  if (o.prompt_lookup() < 0 || o.prompt_lookup() > 64) {
    throw InputError(fmt::format("prompt_lookup must be in [0, 64], got {}", o.prompt_lookup()));
  }
  if (o.prompt_lookup() > 0 && o.temperature() != 0.0) {
    throw InputError(fmt::format("prompt_lookup verifies greedy tokens: it needs temperature 0, "
                                 "got {}", o.temperature()));
  }
}

void check_logits(const torch::Tensor& logits) {
  if (torch::isfinite(logits).all().item<bool>()) return;
  const auto bad = torch::isfinite(logits).logical_not().nonzero()[0];  // its index
  std::string at;
  for (int64_t d = 0; d < bad.size(0); ++d) at += (d ? ", " : "") + std::to_string(bad[d].item<int64_t>());
  throw InputError(fmt::format("the logits hold NaN or infinity (first at [{}]): the model's "
                               "weights or its input are not finite numbers", at));
}

namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();

void check_shape(const torch::Tensor& logits, const char* who) {
  if (!logits.defined() || logits.dim() != 2 || logits.size(1) < 1 ||
      !torch::isFloatingType(logits.scalar_type())) {
    throw InputError(fmt::format(
        "{} needs (B, V) floating logits with V >= 1, got {}", who,
        logits.defined() ? c10::str(logits.scalar_type(), " ", logits.sizes()) : "none"));
  }
}

// Below float's smallest normal number the division cannot stay finite:
// such a temperature is greedy, as 0 is.
bool greedy(const SamplingOptions& o) { return o.temperature() < std::numeric_limits<float>::min(); }

bool on_device(const SamplingOptions& o, const torch::Tensor& logits) {
  return o.draw() == Draw::kDevice || (o.draw() == Draw::kAuto && !logits.is_cpu());
}

// The host's draw (Draw::kHost): the CPU's stream.
torch::Tensor draw_on_host(const torch::Tensor& logits, const SamplingOptions& o,
                           at::Generator& generator) {
  // Each row's largest logit becomes 0 before the division, so a small
  // temperature sends the others to -inf (probability 0), never to NaN.
  auto shifted = logits.to(torch::kCPU, torch::kFloat);
  shifted = shifted - std::get<0>(shifted.max(-1, /*keepdim=*/true));  // (B, V), <= 0
  auto scaled = shifted / o.temperature();                                 // (B, V)
  if (o.top_k() && *o.top_k() < scaled.size(-1)) {
    // Everything below the k-th largest logit is dropped (ties kept).
    auto kth = std::get<0>(scaled.topk(*o.top_k(), -1)).select(-1, *o.top_k() - 1);  // (B)
    scaled = scaled.masked_fill(scaled < kth.unsqueeze(-1), kNever);
  }
  if (o.top_p() < 1.0) {
    auto [sorted, order] = scaled.sort(-1, /*descending=*/true);  // (B, V) each
    auto probs = sorted.softmax(-1);                               // (B, V)
    // Drop a token when the tokens ranked above it already reach top_p
    // (compared in double: a top_p below float's range is not 0). The most
    // likely token always stays.
    auto above = (probs.cumsum(-1) - probs).to(torch::kDouble);    // (B, V)
    auto drop_sorted = above >= o.top_p();
    drop_sorted.select(-1, 0).fill_(false);
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    scaled = scaled.masked_fill(drop, kNever);
  }
  auto probs = scaled.softmax(-1);  // (B, V)
  return torch::multinomial(probs, 1, /*replacement=*/false, generator).squeeze(-1);  // (B)
}

// The device's draw (Draw::kDevice) of every row at once, each with its own
// options and generator: the host's filters with the settings as (B, 1)
// tensors, then the inverse of each row's cumulative distribution.
torch::Tensor draw_on_device(const torch::Tensor& logits, const std::vector<RowSampler>& rows) {
  const int64_t B = logits.size(0), V = logits.size(1);
  // Per row: temperature, k, top_p (+inf: keep all), the uniform number.
  auto settings = torch::empty({B, 4}, torch::kDouble);
  auto* at = settings.data_ptr<double>();
  bool any_p = false;
  int64_t most_k = 0;  // the largest k below V: 0 for none
  std::vector<uint8_t> argmax(static_cast<size_t>(B));
  for (int64_t r = 0; r < B; ++r) {
    const SamplingOptions& o = *rows[static_cast<size_t>(r)].options;
    const bool g = greedy(o);
    argmax[static_cast<size_t>(r)] = g;
    const int64_t k = o.top_k() && !g ? std::min(*o.top_k(), V) : V;
    if (k < V) most_k = std::max(most_k, k);
    any_p |= o.top_p() < 1.0 && !g;
    at[4 * r + 0] = g ? 1.0 : o.temperature();
    at[4 * r + 1] = static_cast<double>(k);
    at[4 * r + 2] = o.top_p() < 1.0 ? o.top_p() : std::numeric_limits<double>::infinity();
    // A greedy row draws nothing, as on the host.
    at[4 * r + 3] = g ? 0.0
                      : torch::rand({1}, *rows[static_cast<size_t>(r)].generator, torch::kDouble)
                            .item<double>();
  }
  settings = detail::to_device(settings, logits.device());               // one copy
  auto x = logits.to(torch::kFloat);                                     // (B, V)
  x = (x - x.amax(-1, /*keepdim=*/true)) / settings.narrow(1, 0, 1).to(torch::kFloat);
  if (most_k > 0) {  // below the row's k-th largest logit: dropped (ties kept)
    const auto k = settings.narrow(1, 1, 1).to(torch::kLong);              // (B, 1)
    const auto top = std::get<0>(x.topk(most_k, -1));                      // (B, most_k)
    auto kth = top.gather(1, (k - 1).clamp_max(most_k - 1));               // (B, 1)
    kth = kth.masked_fill(k >= V, kNever);
    x = x.masked_fill(x < kth, kNever);
  }
  if (any_p) {  // as the host's, against each row's top_p
    auto sorted_order = x.sort(/*stable=*/true, -1, /*descending=*/true);
    const auto& sorted = std::get<0>(sorted_order);
    const auto& order = std::get<1>(sorted_order);
    auto probs = sorted.softmax(-1);
    auto drop_sorted = (probs.cumsum(-1) - probs).to(torch::kDouble) >= settings.narrow(1, 2, 1);
    drop_sorted.select(-1, 0).fill_(false);
    x = x.masked_fill(torch::zeros_like(drop_sorted).scatter(-1, order, drop_sorted), kNever);
  }
  const auto probs = x.softmax(-1).to(torch::kDouble);                  // (B, V)
  const auto cdf = probs.cumsum(-1);                                     // (B, V)
  const auto target = settings.narrow(1, 3, 1) * cdf.narrow(1, V - 1, 1);  // (B, 1)
  auto ids = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true);  // (B, 1)
  // Past the end only where rounding took u * total to the total: the last
  // token that can be drawn.
  const auto index = torch::arange(V, ids.options()).expand({B, V});
  const auto last = index.masked_fill(probs.le(0), 0).amax(-1, /*keepdim=*/true);  // (B, 1)
  ids = torch::minimum(ids, last).squeeze(-1);                           // (B)
  auto greedy_rows =
      detail::to_device(torch::from_blob(argmax.data(), {B}, torch::kBool), logits.device());
  return torch::where(greedy_rows, logits.argmax(-1), ids);
}

}  // namespace

torch::Tensor sample_next(const torch::Tensor& logits, const SamplingOptions& o,
                          at::Generator& generator) {
  check_shape(logits, "sample_next");
  if (!greedy(o) && !on_device(o, logits)) {
    check_logits(logits);
    return draw_on_host(logits, o, generator);
  }
  // Queued before check_logits waits for the device, so that these
  // launches overlap the work that makes the logits; non-finite logits
  // still throw, the ids dropped.
  auto ids = greedy(o) ? logits.argmax(-1)                              // (B)
                       : draw_on_device(logits, std::vector<RowSampler>(
                                                    static_cast<size_t>(logits.size(0)),
                                                    RowSampler{&o, &generator}));
  check_logits(logits);
  return ids;
}

std::vector<RowDraw> sample_rows(const torch::Tensor& logits,
                                 const std::vector<RowSampler>& rows) {
  check_shape(logits, "sample_rows");
  const auto B = static_cast<size_t>(logits.size(0));
  if (rows.size() != B) {
    throw InputError(fmt::format("sample_rows has {} rows of logits but {} samplers", B,
                                 rows.size()));
  }
  std::vector<int64_t> device_rows;  // drawn together
  std::vector<RowSampler> device_samplers;
  for (size_t r = 0; r < B; ++r) {
    if (!rows[r].options || !rows[r].generator) {
      throw InputError(fmt::format("sample_rows: row {} has no options or no generator", r));
    }
    if (on_device(*rows[r].options, logits)) {
      device_rows.push_back(static_cast<int64_t>(r));
      device_samplers.push_back(rows[r]);
    }
  }
  // The device's rows are queued before anything waits for the device (as
  // in sample_next); a row whose logits are not finite has its id dropped.
  torch::Tensor drawn;
  if (!device_rows.empty()) {
    const bool all = device_rows.size() == B;
    const auto which = detail::to_device(torch::tensor(device_rows), logits.device());
    drawn = draw_on_device(all ? logits : logits.index_select(0, which), device_samplers);
  }
  const auto finite = torch::isfinite(logits).all(-1).to(torch::kCPU).contiguous();  // (B)
  if (drawn.defined()) drawn = drawn.to(torch::kCPU).contiguous();
  std::vector<RowDraw> out(B);
  for (size_t r = 0, d = 0; r < B; ++r) {
    const auto row = logits.narrow(0, static_cast<int64_t>(r), 1);
    const bool on_device_row = d < device_rows.size() && device_rows[d] == static_cast<int64_t>(r);
    if (!finite.data_ptr<bool>()[r]) {
      try {
        check_logits(row);
      } catch (const InputError& e) {
        out[r].error = e.what();
      }
    } else if (on_device_row) {
      out[r].token = drawn.data_ptr<int64_t>()[d];
    } else {
      out[r].token = sample_next(row, *rows[r].options, *rows[r].generator).item<int64_t>();
    }
    if (on_device_row) ++d;
  }
  return out;
}

template <>
const std::vector<std::pair<Draw, std::string>>& names<Draw>() {
  static const std::vector<std::pair<Draw, std::string>> kNames = {
      {Draw::kAuto, "auto"}, {Draw::kHost, "host"}, {Draw::kDevice, "device"}};
  return kNames;
}

}  // namespace gpt2
