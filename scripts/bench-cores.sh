#!/bin/bash
# The cold build of 10,000 runs on fewer and fewer of this machine's cores (one CPU per
# physical core first, `taskset`), with the filesystem's floors and the render-only time at
# each: how the build scales with cores (README, Benchmark, "On more cores").
#   scripts/bench-cores.sh [BENCH_BINARY]      CORES="16 8 4 2" by default; WORK=/dev/shm/sm
# BENCH_BINARY defaults to the newest target/release/deps/site_build-*, built by
# `cargo bench --bench site_build --no-run`. Output must go to a tmpfs with 8 GB free.
set -u
B=${1:-$(ls -t target/release/deps/site_build-* | grep -v '\.d$' | head -1)}
W=${WORK:-/dev/shm/sm}
nproc; lscpu | grep -E "Model name|Thread|Core|Socket"
order=$(lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | awk -F, '{k=$3":"$2; n[k]++; print n[k], $1}' | sort -s -n -k1,1 | awk '{print $2}' | paste -sd,)
echo "cpu order $order; work in $W"
rm -rf "$W" && mkdir -p "$W" || exit 1
"$B" --generate 10000 "$W/d" || exit 1
for c in ${CORES:-16 8 4 2}; do
  [ "$c" -le "$(nproc)" ] || continue
  cpus=$(echo "$order" | cut -d, -f1-"$c")
  echo "== $c cores ($cpus)"
  /usr/bin/time -f "cold: %e s wall, %U user, %S sys, %M KB" taskset -c "$cpus" "$B" --cold "$W/d" 2>&1 | grep -v "^sizes"
  taskset -c "$cpus" "$B" --floors "$W/d"
  /usr/bin/time -f "render only: %e s wall, %U user, %S sys" taskset -c "$cpus" "$B" --render-only "$W/d" 2>&1 | grep -E "load|render |wall"
done
rm -rf "$W"
