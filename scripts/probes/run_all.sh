#!/usr/bin/env bash
# Run every probe in scripts/probes on the lent GPU, each in a fresh process with a time limit; one
# tarball of their outputs in $OUT (the device tool brings back few files).
#   OUT=/tmp/out bash scripts/probes/run_all.sh [probe ...]      (default: every *_probe.py)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_DISABLE=1 NCCL_NVLS_ENABLE=0
res=/tmp/probe-results; rm -rf "$res"; mkdir -p "$res"
probes=("$@"); [ ${#probes[@]} -gt 0 ] || probes=($(cd scripts/probes && ls *_probe.py | sed 's/_probe.py//'))
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; nproc; } > "$res/env.txt" 2>&1
for p in "${probes[@]}"; do
  limit=${LIMIT_S:-110}
  t0=$(date +%s)
  timeout "$limit" python3 "scripts/probes/${p}_probe.py" --out "$res/$p" > "$res/$p.log" 2>&1
  rc=$?
  echo "probe $p rc=$rc $(( $(date +%s) - t0 ))s" | tee -a "$res/summary.txt"
  tail -4 "$res/$p.log"
done
tar czf "$OUT/probes.tar.gz" -C /tmp probe-results
ls -la "$OUT"
