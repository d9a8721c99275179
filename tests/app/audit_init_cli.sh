#!/bin/sh
# `gpt2 inspect --audit-init` as a research repo's CI would run it: exit 0
# for a model at GPT-2's init, 1 with the finding named, 3 for a trained one.
#   audit_init_cli.sh GPT2 FOLDER SCRIPT   (SCRIPT: tests/python/audit_models.py)
set -eu
g=$1 t=$2 py=$3
rm -rf "$t" && mkdir -p "$t" && cd "$t"
/usr/bin/python3 "$py" "$t" > /dev/null
expect() {  # expect CODE PATTERN FILE [FLAGS...]: the audit's status and a line of its output
  code=$1 pattern=$2; shift 2
  rc=0; "$g" inspect --audit-init "$@" > out.txt 2>&1 || rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -q "$pattern" out.txt; then
    cat out.txt; echo "audit of $*: exit $rc, expected $code and '$pattern'"; exit 1
  fi
}
# nanoGPT-shaped files initialized by Python: right, scale missing, a copied head, trained.
expect 0 "are one tensor: ok" init.pt
grep -q "result .*follows GPT-2's initialization and tie" out.txt
test -s init.pt-init-audit.svg
expect 1 "finding   mlp.c_proj.weight: .*no residual scale" no_scale.pt
expect 1 "is a copy of transformer.wte.weight, not the same tensor" copy_head.pt
expect 3 "init not judged (trained), tie ok" trained.pt
# The library's own at 12 layers, as a checkpoint and as safetensors (no head stored).
"$g" inspect --n-layer 12 --n-head 4 --n-embd 64 --block-size 32 --save own.pt > /dev/null
expect 0 "result .*follows GPT-2's initialization" own.pt --audit-plot own.svg
test -s own.svg
"$g" convert own.pt own.safetensors > /dev/null
expect 0 "is not stored: the format ties it" own.safetensors --audit-plot none
test ! -e own.safetensors-init-audit.svg
expect 1 "DEPARTS from the rule" own.pt --scheme n --audit-plot none
# A model the demo's way, trained a few steps: the init is not judged.
"$g" train --n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 4 --max-steps 10 \
  --warmup-steps 2 --sample-tokens 0 --out demo > /dev/null
expect 3 "moved .*LayerNorm gains are not 1" demo/ckpt.pt
echo "audits ok"
