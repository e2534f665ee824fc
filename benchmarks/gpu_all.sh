#!/usr/bin/env bash
# Every robot of benchmarks/gpu.py on one GPU, float64 then float32 (with float32's error
# against float64), in SECONDS seconds at most: one process per robot prepares (lowers and
# compiles) its programs while the others do, and their timing phases take turns on the GPU
# (`--lock`). JSON lines in DIR/gpu.jsonl, everything else the processes printed in DIR/log.txt.
#
# Run: bash benchmarks/gpu_all.sh DIR [SECONDS [PRECISION]]
# (PRECISION: JAX's precision of float32 matrix products, `default` or `highest`)
set -u
out=${1:?usage: gpu_all.sh DIR [SECONDS [PRECISION]]}
precision=${3:-default}
end=$(($(date +%s) + ${2:-450}))
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1

left() { echo $((end - $(date +%s))); }

robot() { # name, float64 options, float32 options ("-" for none)
    local name=$1 f64=$2 f32=$3
    # shellcheck disable=SC2086
    python3 "$here/gpu.py" --dtype float64 --robots "$name" --lock "$work/gpu.lock" \
        --save "$work/$name.npz" --budget "$(left)" $f64 >"$work/$name.64" 2>&1
    [ "$f32" = "-" ] || [ "$(left)" -lt 30 ] && return
    # shellcheck disable=SC2086
    python3 "$here/gpu.py" --dtype float32 --robots "$name" --lock "$work/gpu.lock" \
        --compare "$work/$name.npz" --matmul-precision "$precision" --budget "$(left)" \
        --batches 1 1024 65536 $f32 >"$work/$name.32" 2>&1
}

fd="forward_dynamics_cholesky forward_dynamics_articulated"
all="--functions inverse_dynamics mass_inverse_dynamics $fd"
heavy="--functions inverse_dynamics mass_inverse_dynamics forward_dynamics_cholesky"
for name in pcs1 pcs8 pcs16 spcs4 rigid6 rigid30 cc20; do
    robot "$name" "$all" "$all" &
done
robot helicoid "$heavy" "$heavy" &
robot helicoid_mesh "--functions inverse_dynamics mass_inverse_dynamics --batches 1 256 1024" - &
(sleep "$(left)" && pkill -f "$here/gpu.py") &
killer=$!
wait $(jobs -p | grep -v "^$killer$")
kill "$killer" 2>/dev/null
cat "$work"/*.64 "$work"/*.32 2>/dev/null | grep '^{' >"$out/gpu.jsonl"
for f in "$work"/*.64 "$work"/*.32; do
    echo "== $f"
    grep -v '^{' "$f" | tail -40
done >"$out/log.txt" 2>/dev/null
wc -l "$out/gpu.jsonl"
