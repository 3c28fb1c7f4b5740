#!/usr/bin/env bash
# How far do fresh processes of one sweep move apart? (issue 8: the mlp's graph median.)
# Records MODEL once, then alternates `graphlab repro MODEL` (against that first recording) with new
# `graphlab record` processes, N times: 2N fresh-process sweeps of one model in a few minutes, every raw block
# kept (rec*/h200/MODEL/sweep.json, repro_*.json, packed as $OUT/probe.tgz) for analysis offline.
#   OUT=/tmp/rp MODEL=mlp N=4 bash scripts/probes/repro_probe.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/repro-probe}; MODEL=${MODEL:-mlp}; N=${N:-4}; EXTRA_S=${EXTRA_S:-20}
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TQDM_DISABLE=1
mkdir -p "$OUT"
log() { echo "[probe] $(date -u +%H:%M:%S) $*" | tee -a "$OUT/probe.log"; }
log "record $MODEL rec0"
timeout 120 python3 -m graphlab record --out "$OUT/rec0" --models "$MODEL" > "$OUT/rec0.log" 2>&1 || log "rec0 rc=$?"
for i in $(seq 1 "$N"); do
  log "repro $MODEL $i"
  GRAPHLAB_RECORDINGS="$OUT/rec0" timeout 120 python3 -m graphlab repro "$MODEL" --quiet --max-extra-s "$EXTRA_S" \
    --json "$OUT/repro_$i.json" > "$OUT/repro_$i.log" 2>&1 || log "repro $i rc=$?"
  if [ "$i" -lt "$N" ]; then
    log "record $MODEL rec$i"
    timeout 120 python3 -m graphlab record --out "$OUT/rec$i" --models "$MODEL" > "$OUT/rec$i.log" 2>&1 || log "rec$i rc=$?"
  fi
done
find "$OUT" -name '*.dot' -delete
# the device tool brings back at most 8 files, two folders down: one archive
tar -C "$OUT" --exclude=probe.tgz -czf "$OUT/probe.tgz" . && find "$OUT" -mindepth 1 ! -name probe.tgz ! -name probe.log -delete
log "done: $OUT/probe.tgz"
