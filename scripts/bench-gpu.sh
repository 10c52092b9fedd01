#!/usr/bin/env bash
# GPU benchmarks beside PyTorch on the same GPU, in one run: each pair alternates ours and the
# peer, 5 runs each, and prints the median of each and their ratio (peer time / ours: above 1.0
# we are faster). Needs a GPU and python3 with torch (the GPU machine's image has both).
#
#   scripts/bench-gpu.sh BIN_DIR [OUT_DIR] [all|train]
#
# BIN_DIR holds fused_optimizer_bench, half_compression_bench, top_k_bench, powersgd_bench,
# gemm_bench and train_step_bench; OUT_DIR (default: the current directory) gets
# bench-gpu.jsonl, bench-train-*.txt, bench-half.jsonl, bench-topk.jsonl, bench-powersgd.jsonl
# and bench-gemm.jsonl (every run) and
# bench-gpu.md (the tables). `train` runs the training-step pairs alone.
set -euo pipefail

bin_dir=$1
out_dir=${2:-.}
what=${3:-all}
here=$(cd "$(dirname "$0")/.." && pwd)
runs=5
jsonl="$out_dir/bench-gpu.jsonl"
: >"$jsonl"

median_ms() {  # impl optimizer -> median ms_per_step of the runs recorded
  python3 - "$jsonl" "$1" "$2" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ms = [r["ms_per_step"] for r in rows if r["impl"] == sys.argv[2] and r["optimizer"] == sys.argv[3]]
print(statistics.median(ms))
PY
}

: >"$out_dir/bench-gpu.md"
device=$(python3 -c 'import torch; print(torch.cuda.get_device_name(0))')

# Training steps at batch 256, fp32 and bf16 mixed precision (PyTorch: torch.autocast), ours
# against PyTorch eager on the same model: the Fashion-MNIST MLP, CNN (Conv-BatchNorm-ReLU-MaxPool
# twice, then two Linear layers), ResNet and Transformer.
train_pair() {  # onnx_file torch_model label precision
  local train_log="$out_dir/bench-train-$2-$4.txt"
  : >"$train_log"
  for ((i = 0; i < runs; i++)); do
    echo "ours $("$bin_dir/train_step_bench" --model "$here/examples/fashion-mnist/$1" \
      --batch-size 256 --steps 200 --warmup 20 --device cuda --precision "$4")" >>"$train_log"
    echo "torch $(python3 "$here/bench/pytorch_train_step.py" --model "$2" --batch-size 256 \
      --steps 200 --warmup 20 --device cuda --precision "$4")" >>"$train_log"
  done
  python3 - "$train_log" "$device" "$3" "$4" >>"$out_dir/bench-gpu.md" <<'PY'
import re, statistics, sys
rows = {"ours": [], "torch": []}
memory = {"ours": [], "torch": []}
reserved = {"ours": [], "torch": []}
for line in open(sys.argv[1]):
    who = line.split()[0]
    rows[who].append(float(re.search(r"steps_per_second=([0-9.]+)", line).group(1)))
    found = re.search(r"peak_device_mb=([0-9.]+)", line)
    if found:
        memory[who].append(float(found.group(1)))
    found = re.search(r"peak_reserved_mb=([0-9.]+)", line)
    if found:
        reserved[who].append(float(found.group(1)))
ours, torch = statistics.median(rows["ours"]), statistics.median(rows["torch"])
print()
print(f"| training steps/s, {sys.argv[3]}, batch 256, {sys.argv[4]} | ours | PyTorch | ours / PyTorch | device |")
print("| --- | --- | --- | --- | --- |")
print(f"| steps/s (median of {len(rows['ours'])}) | {ours:.1f} | {torch:.1f} | {ours / torch:.3f} | {sys.argv[2]} |")
print(f"| runs (steps/s) | {', '.join(f'{r:.0f}' for r in rows['ours'])} | {', '.join(f'{r:.0f}' for r in rows['torch'])} | | |")
if memory["ours"] and memory["torch"]:
    m_ours, m_torch = max(memory["ours"]), max(memory["torch"])
    print(f"| peak device memory held by tensors (MiB) | {m_ours:.1f} | {m_torch:.1f} | {m_ours / m_torch:.3f} | {sys.argv[2]} |")
if reserved["ours"] and reserved["torch"]:
    r_ours, r_torch = max(reserved["ours"]), max(reserved["torch"])
    print(f"| peak device memory reserved, caches included (MiB) | {r_ours:.1f} | {r_torch:.1f} | {r_ours / r_torch:.3f} | {sys.argv[2]} |")
PY
}
for precision in fp32 bf16; do
  train_pair fmnist_mlp.onnx mlp MLP "$precision"
  train_pair fmnist_cnn.onnx fmnist_cnn "CNN (32, 64 channels, hidden 128)" "$precision"
  train_pair fmnist_resnet.onnx fmnist_resnet "ResNet (16, 32, 64 channels, a basic block each)" \
    "$precision"
  train_pair fmnist_transformer.onnx fmnist_transformer \
    "Transformer (2 layers, 64 wide, 4 heads)" "$precision"
done
if [[ "$what" == train ]]; then
  cat "$out_dir/bench-gpu.md"
  exit 0
fi

{
  echo
  echo "| benchmark | ours (ms) | PyTorch (ms) | PyTorch / ours | device |"
  echo "| --- | --- | --- | --- | --- |"
} >>"$out_dir/bench-gpu.md"
for optimizer in adam sgd; do
  for ((i = 0; i < runs; i++)); do
    "$bin_dir/fused_optimizer_bench" --optimizer "$optimizer" --params 100000000 >>"$jsonl"
    python3 "$here/bench/gpu/torch_fused_optimizer.py" --optimizer "$optimizer" \
      --params 100000000 >>"$jsonl"
  done
  ours=$(median_ms autodist "$optimizer")
  peer=$(median_ms torch "$optimizer")
  ratio=$(python3 -c "print(f'{$peer / $ours:.3f}')")
  echo "| fused $optimizer, 100M parameters (median of $runs) | $ours | $peer | $ratio | $device |" \
    >>"$out_dir/bench-gpu.md"
done
# float16 compression with error feedback against a device copy in the same run (target 80%).
half_jsonl="$out_dir/bench-half.jsonl"
: >"$half_jsonl"
for ((i = 0; i < runs; i++)); do "$bin_dir/half_compression_bench" >>"$half_jsonl"; done
python3 - "$half_jsonl" >>"$out_dir/bench-gpu.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print()
print("| fp16 + error feedback, 100M elements | ours (GB/s) | device copy (GB/s) | ours / copy (median of runs) | device |")
print("| --- | --- | --- | --- | --- |")
print(f"| one pass, 14 bytes an element | {statistics.median(r['gb_per_s'] for r in rows):.1f} | "
      f"{statistics.median(r['copy_gb_per_s'] for r in rows):.1f} | "
      f"{statistics.median(r['of_copy'] for r in rows):.3f} | {rows[0]['device']} |")
PY
# Top-k selection at 1% against torch.topk of the magnitudes, sorted (the default) and not,
# alternating (target: at least 1.0x).
topk_jsonl="$out_dir/bench-topk.jsonl"
: >"$topk_jsonl"
for ((i = 0; i < runs; i++)); do
  "$bin_dir/top_k_bench" --elements 25000000 --fraction 0.01 >>"$topk_jsonl"
  python3 "$here/bench/gpu/torch_topk.py" --elements 25000000 --fraction 0.01 >>"$topk_jsonl"
  python3 "$here/bench/gpu/torch_topk.py" --elements 25000000 --fraction 0.01 --sorted false \
    >>"$topk_jsonl"
done
python3 - "$topk_jsonl" >>"$out_dir/bench-gpu.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ms = {impl: statistics.median(r["ms"] for r in rows if r["impl"] == impl)
      for impl in dict.fromkeys(r["impl"] for r in rows)}
ours = ms["autodist"]
print()
print("| top-k at 1%, 25M elements | ours (ms) | torch.topk sorted (ms) | torch.topk unsorted (ms) | sorted / ours | unsorted / ours | device |")
print("| --- | --- | --- | --- | --- | --- | --- |")
print(f"| median of runs | {ours:.3f} | {ms['torch_sorted_true']:.3f} | {ms['torch_sorted_false']:.3f} | "
      f"{ms['torch_sorted_true'] / ours:.3f} | {ms['torch_sorted_false'] / ours:.3f} | {rows[0]['device']} |")
PY
# PowerSGD compress + decompress per step on the MLP's and CNN's gradient shapes, rank 1 and 4,
# against PyTorch's powerSGD_hook math, alternating (target: at least 1.0x).
powersgd_jsonl="$out_dir/bench-powersgd.jsonl"
: >"$powersgd_jsonl"
for rank in 1 4; do
  for ((i = 0; i < runs; i++)); do
    "$bin_dir/powersgd_bench" --rank "$rank" >>"$powersgd_jsonl"
    python3 "$here/bench/gpu/torch_powersgd.py" --rank "$rank" >>"$powersgd_jsonl"
  done
done
python3 - "$powersgd_jsonl" >>"$out_dir/bench-gpu.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print()
print("| PowerSGD step, MLP + CNN shapes | ours (ms) | powerSGD_hook math (ms) | PyTorch / ours | device |")
print("| --- | --- | --- | --- | --- |")
for rank in dict.fromkeys(r["rank"] for r in rows):
    ours = statistics.median(r["ms_per_step"] for r in rows if r["rank"] == rank and r["impl"] == "autodist")
    peer = statistics.median(r["ms_per_step"] for r in rows if r["rank"] == rank and r["impl"] == "torch")
    print(f"| rank {rank} (median of runs) | {ours:.3f} | {peer:.3f} | {peer / ours:.3f} | {rows[0]['device']} |")
PY
# Our Gemm and MatMul ops against bare cuBLASLt calls (gemm_bench alternates the two within a run).
gemm_jsonl="$out_dir/bench-gemm.jsonl"
: >"$gemm_jsonl"
for ((i = 0; i < runs; i++)); do "$bin_dir/gemm_bench" >>"$gemm_jsonl"; done
python3 - "$gemm_jsonl" >>"$out_dir/bench-gpu.md" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print()
print("| Gemm / MatMul shape | ours (us) | bare cuBLASLt (us) | bare / ours (median of runs) | device |")
print("| --- | --- | --- | --- | --- |")
for shape in dict.fromkeys(r["shape"] for r in rows):
    mine = [r for r in rows if r["shape"] == shape]
    print(f"| {shape} | {statistics.median(r['ours_us'] for r in mine):.2f} | "
          f"{statistics.median(r['bare_us'] for r in mine):.2f} | "
          f"{statistics.median(r['bare_over_ours'] for r in mine):.3f} | {mine[0]['device']} |")
PY
cat "$out_dir/bench-gpu.md"
