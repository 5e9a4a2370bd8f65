#!/usr/bin/env bash
# One call: the shell timeline bench (built here as its header says) on one GPU.
# usage: [SECTIONS=...] bash run.sh BINDIR OUT   (SECTIONS: the bench's sections, e.g. 67; all
# when unset. Each callN-*.csv says which GPU ran it; the source is the final one, whose
# sections grew call by call: a call ran the sections that existed then.)
set -uo pipefail
bin=$(cd "$1" && pwd); out=$2; mkdir -p "$out"
export PATH="$PATH:/usr/local/nvidia/bin" CUDA_VISIBLE_DEVICES=0
nvidia-smi -L | tee "$out/gpu.txt"
"$bin/shell_timeline" 512 15 | tee "$out/shell_timeline.csv"
