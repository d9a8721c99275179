#pragma once
/// The one switch that keeps module constructors from drawing their
/// initial values, for callers that write every tensor right after.

namespace gpt2 {

/// While alive, gpt2::Linear, gpt2::LayerNorm and gpt2::GPT built on this
/// thread allocate their tensors and leave them unwritten. GPT uses it while
/// building its children, so that init_weights writes each tensor once and a
/// seeded model leaves torch's default generator untouched; clone and the
/// loaders use it (GPTImpl::uninitialized) before copying tensors in.
/// Scopes nest.
class DeferInit {
 public:
  DeferInit();
  ~DeferInit();
  DeferInit(const DeferInit&) = delete;
  DeferInit& operator=(const DeferInit&) = delete;

  /// Whether a DeferInit is alive on this thread.
  static bool active();

 private:
  bool previous_;
};

}  // namespace gpt2
