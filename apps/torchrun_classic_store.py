"""torchrun with the rendezvous store that every torch build has.

Debian 13's python3-torch (2.6) is built without libuv, yet its TCPStore
asks for a libuv server unless told otherwise, and torchrun never tells it:
every torchrun launch stops with "use_libuv was requested but PyTorch was
build without libuv support". This runs torchrun itself with TCPStore's
`use_libuv` off by default, the server torch 1.13 runs; the arguments are
torchrun's:

    python3 apps/torchrun_classic_store.py --standalone --nproc_per_node 2 \\
        --redirects 1 --tee 1 --no_python build/bin/gpt2 train

On a torch whose torchrun works (Debian 12's 1.13, a pip wheel) it is
torchrun as is. docs/distributed.md says more.
"""
import sys

import torch.distributed as dist

_TCPStore = dist.TCPStore


class TCPStore(_TCPStore):
    def __init__(self, *args, **kwargs):
        if "use_libuv" in _TCPStore.__init__.__doc__:
            kwargs.setdefault("use_libuv", False)
        super().__init__(*args, **kwargs)


# Before torchrun's modules import the name.
dist.TCPStore = TCPStore

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
