#!/usr/bin/env bash
# CLI-level pipeline benchmark: fathom-cli run on fathom-cli synth datasets, with the
# JSON report; prints the median over repeats of each step's wall time and the peak RSS.
#
#   bench/pipeline.sh [--cells N] [--genes G] [--repeats R] [--devices cpu:N]
#                     [--graph] [--write-x] [--stream] [--data DIR]
#
# --graph adds neighbors, UMAP, Leiden and markers; --write-x writes X into the output
# h5ad (default --no-matrix: annotations only); --stream forces the out-of-core path
# (the matrix streamed from the file). Datasets are cached in --data (default
# bench/data, git-ignored; FATHOM_CLI picks another fathom-cli). The issue's two targets:
#   bench/pipeline.sh --cells 100000 --genes 20000 --graph --write-x --repeats 3
#   bench/pipeline.sh --cells 1300000 --genes 28000 --graph --repeats 1
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="${FATHOM_CLI:-$root/build/bin/fathom-cli}"
cells=100000 genes=28000 repeats=3 devices=cpu:2 graph=0 write_x=0 stream=0 data="$root/bench/data"
while [ $# -gt 0 ]; do
  case "$1" in
    --cells) cells="$2"; shift 2 ;;
    --genes) genes="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --devices) devices="$2"; shift 2 ;;
    --graph) graph=1; shift ;;
    --write-x) write_x=1; shift ;;
    --stream) stream=1; shift ;;
    --data) data="$2"; shift 2 ;;
    *) echo "pipeline.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$data"
input="$data/synth_${cells}x${genes}.h5"
if [ ! -f "$input" ]; then
  echo "bench: generating $input" >&2
  "$cli" synth --cells "$cells" --genes "$genes" --seed 0 --out "$input" >&2
fi
extra=()
if [ "$graph" = 1 ]; then extra+=(--neighbors 15 --umap --leiden 1.0 --markers t-test); fi
if [ "$stream" = 1 ]; then extra+=(--memory-budget -1); fi
if [ "$write_x" = 0 ]; then extra+=(--no-matrix); fi
reports=()
for repeat in $(seq 1 "$repeats"); do
  report="$data/report_${cells}_${repeat}.json"
  /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KiB max RSS" -o "$data/time_${repeat}.txt" \
    "$cli" run "$input" --recipe zheng17 --n-top-genes 1000 --n-pcs 50 --devices "$devices" "${extra[@]}" \
    --out "$data/out_${cells}.h5ad" --report "$report" >/dev/null
  echo "bench: run $repeat: $(cat "$data/time_${repeat}.txt")" >&2
  reports+=("$report")
done
times=()
for repeat in $(seq 1 "$repeats"); do times+=("$data/time_${repeat}.txt"); done
/usr/bin/python3 - "$repeats" "${reports[@]}" "${times[@]}" <<'PY'
import json, re, statistics, sys
count = int(sys.argv[1])
runs = [json.load(open(path)) for path in sys.argv[2:2 + count]]
process = [open(path).read() for path in sys.argv[2 + count:]]
steps = [s["step"] for s in runs[0]["steps"]]
print(f"{'step':<12}{'wall s (median)':>18}{'cpu s':>10}{'peak RSS MiB':>14}")
for index, step in enumerate(steps):
    walls = [r["steps"][index]["wall_seconds"] for r in runs]
    cpus = [r["steps"][index]["cpu_seconds"] for r in runs]
    rss = max(r["steps"][index]["peak_rss_bytes"] for r in runs) / 2**20
    print(f"{step:<12}{statistics.median(walls):>18.3f}{statistics.median(cpus):>10.2f}{rss:>14.0f}")
totals = [r["total_wall_seconds"] for r in runs]
print(f"{'total':<12}{statistics.median(totals):>18.3f}   (median of {len(runs)} runs; {runs[0]['cells']} cells)")
walls = [float(re.search(r"([0-9.]+) s wall", text).group(1)) for text in process]
rss = [int(re.search(r"([0-9]+) KiB max RSS", text).group(1)) for text in process]
print(f"{'process':<12}{statistics.median(walls):>18.3f}   s wall from start to exit (median), peak RSS {max(rss) / 2**20:.2f} GiB")
PY
