# Sourced by the data-parallel tests: torchrun as a user of this Python torch
# runs it. Debian 13's torch 2.6 cannot serve a rendezvous store with its
# defaults (it asks for libuv, which that build lacks), so its torchrun never
# starts; there apps/torchrun_classic_store.py runs torchrun instead, as
# docs/distributed.md says. Sets torchrun_form (plain | classic_store) and
# torchrun_cmd (words, for `timeout` and `ip netns exec`), and defines
# torchrun().
# Where the LibTorch built against is a Python package's (PyPI's wheel),
# tests/CMakeLists.txt sets GPT2_TORCH_PYTHONPATH to the folder that holds
# it, and torchrun comes from that torch: its store and the library then
# speak one release, as for a user of the wheel.
python_torch=/usr/bin/python3 plain_torchrun=/usr/bin/torchrun
if [ -n "${GPT2_TORCH_PYTHONPATH:-}" ]; then
  python_torch="env PYTHONPATH=$GPT2_TORCH_PYTHONPATH /usr/bin/python3"
  plain_torchrun="$python_torch -m torch.distributed.run"
fi
if $python_torch -c 'import torch.distributed as d; d.TCPStore("127.0.0.1", 0, 1, True)' 2>/dev/null; then
  torchrun_form=plain
  torchrun_cmd=$plain_torchrun
else
  torchrun_form=classic_store
  torchrun_cmd="$python_torch $(cd "$(dirname "$0")/../.." && pwd)/apps/torchrun_classic_store.py"
fi
torchrun() { $torchrun_cmd "$@"; }
