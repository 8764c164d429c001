#!/usr/bin/env bash
# MPI benchmark: fathom-cli run on a fathom-cli synth dataset with 1, 2 and 4 ranks
# (--devices cpu:1 per rank), and the per-rank table from the reports: rows, matrix
# bytes read, peak RSS, bytes sent / received per step and per-step wall time (rank 0).
# On a machine with fewer cores than ranks the times show overhead only; the memory and
# the traffic are the real figures.
#
#   bench/mpi.sh [--cells N] [--genes G] [--ranks "1 2 4"] [--graph] [--no-matrix] [--data DIR]
#
# --no-matrix leaves X out of the output (at 1.3M cells X is 2.9G entries: tens of GB
# and most of the run's time); the output file is removed after each run either way.
#
# "matrix MiB" is the CSR size of the rank's rows (8 bytes per entry and per row): what
# it reads of X in each pass (a streamed run reads its rows twice, and again for X).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cli="${FATHOM_CLI:-$root/build/bin/fathom-cli}"
cells=100000 genes=28000 ranks="1 2 4" graph=0 matrix=1 data="$root/bench/data"
while [ $# -gt 0 ]; do
  case "$1" in
    --cells) cells="$2"; shift 2 ;;
    --genes) genes="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --graph) graph=1; shift ;;
    --no-matrix) matrix=0; shift ;;
    --data) data="$2"; shift 2 ;;
    *) echo "mpi.sh: unknown option $1" >&2; exit 2 ;;
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
if [ "$matrix" = 0 ]; then extra+=(--no-matrix); fi
# As root and with more ranks than cores (Open MPI 4 and 5).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
reports=()
for n in $ranks; do
  report="$data/mpi_report_${cells}_np${n}.json"
  mpiexec -n "$n" "$cli" run "$input" --recipe zheng17 --n-top-genes 1000 --n-pcs 50 --devices cpu:1 \
    "${extra[@]}" --out "$data/mpi_out_np${n}.h5ad" --report "$report" > /dev/null
  rm -f "$data/mpi_out_np${n}.h5ad"
  reports+=("$report")
done
/usr/bin/python3 - "${reports[@]}" <<'PY'
import json, sys
reports = [json.load(open(path)) for path in sys.argv[1:]]
steps = []
for report in reports:
    for entry in report["ranks"]:
        for s in entry["steps"]:
            if s["step"] not in steps:
                steps.append(s["step"])
print(f"MiB sent / received per step: {', '.join(steps)}")
print()
print("| ranks | rank | rows | streamed | matrix MiB | peak RSS MiB | MiB sent / received per step | steps (rank 0 wall s) | total s |")
print("|---|---|---|---|---|---|---|---|---|")
for report in reports:
    ranks = report["ranks"]
    times = ", ".join(f"{s['step']} {s['wall_seconds']:.1f}" for s in report["steps"])
    for entry in ranks:
        moved = {s["step"]: (s["bytes_sent"], s["bytes_received"]) for s in entry["steps"]}
        traffic = ", ".join(f"{moved[k][0] / 2**20:.1f}/{moved[k][1] / 2**20:.1f}" if k in moved else "-" for k in steps)
        rows = entry["rows"]
        lead = entry["rank"] == 0
        print(f"| {len(ranks)} | {entry['rank']} | [{rows[0]}, {rows[1]}) | {'yes' if entry.get('streamed') else 'no'} | "
              f"{entry['matrix_bytes_read'] / 2**20:.0f} | {entry['peak_rss_bytes'] / 2**20:.0f} | "
              f"{traffic if len(ranks) > 1 else '-'} | {times if lead else ''} | "
              f"{report['total_wall_seconds']:.0f} |" if lead else
              f"| {len(ranks)} | {entry['rank']} | [{rows[0]}, {rows[1]}) | {'yes' if entry.get('streamed') else 'no'} | "
              f"{entry['matrix_bytes_read'] / 2**20:.0f} | {entry['peak_rss_bytes'] / 2**20:.0f} | {traffic} | | |")
PY
