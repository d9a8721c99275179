# Sourced by the data-parallel tests: torchrun as a user of this Python torch
# runs it. Debian 13's torch 2.6 cannot serve a rendezvous store with its
# defaults (it asks for libuv, which that build lacks), so its torchrun never
# starts; there apps/torchrun_classic_store.py runs torchrun instead, as
# docs/distributed.md says. Sets torchrun_form (plain | classic_store) and
# torchrun_cmd (words, for `timeout` and `ip netns exec`), and defines
# torchrun().
if /usr/bin/python3 -c 'import torch.distributed as d; d.TCPStore("127.0.0.1", 0, 1, True)' 2>/dev/null; then
  torchrun_form=plain
  torchrun_cmd=/usr/bin/torchrun
else
  torchrun_form=classic_store
  torchrun_cmd="/usr/bin/python3 $(cd "$(dirname "$0")/../.." && pwd)/apps/torchrun_classic_store.py"
fi
torchrun() { $torchrun_cmd "$@"; }
