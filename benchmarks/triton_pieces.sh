#!/usr/bin/env bash
# A Triton release for the GPU machine in two pieces under the 64 MiB a call may carry (issue 33: the GPU suite and the
# benchmarks under a newer Triton than the machine's 3.6).
#
#   bash benchmarks/triton_pieces.sh VERSION [PYTHON_VERSION]      (here, with network; default Python 3.12)
#
# Downloads the manylinux x86-64 wheel, drops what no gemmkit run needs (the CUPTI libraries of Triton's profiler,
# the ptxas that sm_90 does not use) and libtriton's debug symbols (3.8.0: 248 MB wheel -> 57 MB), and writes
# .whl/triton-VERSION/p1/part00 and p2/part01 (.whl/ is git-ignored). On the GPU machine, in two consecutive calls
# while it stays warm (an ignored path carried once stays there): carry .whl/triton-VERSION/p1 in the first, p2 in
# the second, and start the second with TRITON_PIECES=.whl/triton-VERSION: benchmarks/run_gpu.sh then joins the
# pieces, checks their sha256, unpacks them under /tmp and puts them first on PYTHONPATH (torch keeps its own Triton
# for nothing gemmkit calls; env.txt names the Triton that ran).
set -euo pipefail
V=${1:?usage: triton_pieces.sh VERSION [PYTHON_VERSION]}
PY=${2:-3.12}
out=.whl/triton-$V
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$tmp" "triton==$V"
mkdir "$tmp/site"
(cd "$tmp/site" && unzip -q "$tmp"/triton-*.whl)
# sm_90 compiles with one of the two ptxas a wheel bundles: "ptxas" up to 3.8, "ptxas-blackwell" from 3.9 (its
# backends/nvidia/compiler.py get_ptxas sends every arch >= 90 there); keep that one.
nv="$tmp"/site/triton/backends/nvidia
if grep -q "arch < 90" "$nv"/compiler.py; then drop=ptxas; else drop=ptxas-blackwell; fi
rm -rf "$nv"/lib/cupti* "$nv/bin/$drop"
strip --strip-unneeded "$tmp"/site/triton/_C/*.so
tar -C "$tmp/site" -cf - . | xz -T0 -6 > "$tmp/triton.tar.xz"
rm -rf "$out"; mkdir -p "$out/p1" "$out/p2"
split -n 2 -d "$tmp/triton.tar.xz" "$tmp/part"
mv "$tmp/part00" "$out/p1/part00"; mv "$tmp/part01" "$out/p2/part01"
sha256sum < "$tmp/triton.tar.xz" | cut -d' ' -f1 > "$out/p2/sha256"
ls -l "$out"/p1 "$out"/p2
