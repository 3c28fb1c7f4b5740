#!/usr/bin/env bash
# Ray Serve onto the lent H200, whose machine reaches no package index and takes at most 64 MiB per device call:
# the ray wheel (cp312, about 79 MB) travels in parts of at most 40 MB, one part per call, each call copying its part
# out of the checkout (to $HOME/parts: a carried folder is gone by the next call, a file under $HOME stays while the
# machine is warm, about 30 s after a call), and the last call joins, installs and checks (issue 43).
#
#   here, once (with network):      bash scripts/ray_wheel_parts.sh prepare
#   there, back to back, one each:  bash scripts/ray_wheel_parts.sh receive 0    (carry its part and the manifest)
#                                   bash scripts/ray_wheel_parts.sh receive 1
#                                   bash scripts/ray_wheel_parts.sh install      (carry deps/ and the manifest)
#   then, in that same call:        export PYTHONPATH="$HOME/site-ray:$PYTHONPATH"; the GPU Ray test
#
# The exact device calls (carry lists and commands) are in docs/gpu-validation.md, "Plan: the next GPU session".
#
# prepare  downloads ray==$RAY_VERSION for CPython $PY (manylinux x86_64) into $DIR/wheel (or takes $WHEEL), splits
#          it into $DIR/parts/ray.whl.part-00, -01, ... of $PART bytes (split -b), writes $DIR/MANIFEST (the wheel's
#          name, size and sha256, each part's) and $DIR/requires.txt (what ray and its serve extra require, from the
#          wheel's METADATA), and downloads those requirements with their own into $DIR/deps, leaving out the
#          packages the H200's image already has ($PRESENT; SKIP_DEPS=1 skips the download)
# receive N  checks that parts 0..N-1 are in $HOME/parts with their sha256 (else: the machine was given back, start
#          again from part 0), then copies part N there from $DIR/parts and checks it
# install  checks every part, joins them into the wheel, checks its sha256, `pip install --no-deps --no-index
#          --target $TARGET` the wheel and $DIR/deps/*.whl, then one `pip show` of every requirement: exit 4 naming
#          the missing ones (carry their wheels in $DIR/deps), else imports ray and ray.serve
#
# $DIR is .whl/ray (git-ignored) unless RAY_PARTS_DIR says otherwise; $TARGET is $HOME/site-ray.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${RAY_PARTS_DIR:-.whl/ray}
RAY_VERSION=${RAY_VERSION:-2.60.0}
PY=${PY:-3.12}
PART=${PART:-40000000}
PARTS_HOME=${PARTS_HOME:-$HOME/parts}
TARGET=${TARGET:-$HOME/site-ray}
# on the H200's image already (issue 43, from its package list), with what they pull in
PRESENT=${PRESENT:-"aiohttp aiosignal aiohappyeyeballs frozenlist multidict yarl propcache attrs grpcio protobuf pyyaml
requests urllib3 idna certifi charset-normalizer msgpack prometheus-client click filelock packaging typing-extensions
anyio h11 sniffio numpy"}
PLATFORMS=(--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64)

die() { echo "ray_wheel_parts: $1" >&2; exit "${2:-2}"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
manifest() { [ -f "$DIR/MANIFEST" ] || die "no $DIR/MANIFEST: carry it in every call (made by 'prepare')"; }
parts() { awk '$1 == "part" {print $2, $3}' "$DIR/MANIFEST"; }

check_parts_before() {  # the parts numbered below $1 are in $PARTS_HOME, whole
  local want=$1 i=0 name hash
  while read -r name hash; do
    [ "$i" -lt "$want" ] || break
    [ -f "$PARTS_HOME/$name" ] || die "part $i ($name) is not in $PARTS_HOME: the machine was given back between \
calls; start again with 'receive 0'" 3
    [ "$(sha "$PARTS_HOME/$name")" = "$hash" ] || die "part $i ($name) in $PARTS_HOME is damaged: start again" 3
    i=$((i + 1))
  done < <(parts)
  echo "parts 0..$((want - 1)) are in $PARTS_HOME"
}

case "${1:-}" in
prepare)
  mkdir -p "$DIR/wheel" "$DIR/parts" "$DIR/deps"
  if [ -n "${WHEEL:-}" ]; then
    cp "$WHEEL" "$DIR/wheel/"
  else
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
      "${PLATFORMS[@]}" -d "$DIR/wheel" "ray==$RAY_VERSION"
  fi
  wheel=$(ls "$DIR"/wheel/ray-*.whl | head -1)
  [ -f "$wheel" ] || die "no ray wheel in $DIR/wheel"
  rm -f "$DIR"/parts/ray.whl.part-*
  split -b "$PART" -d -a 2 "$wheel" "$DIR/parts/ray.whl.part-"
  {
    echo "wheel $(basename "$wheel") $(sha "$wheel") $(stat -c %s "$wheel")"
    for f in "$DIR"/parts/ray.whl.part-*; do echo "part $(basename "$f") $(sha "$f") $(stat -c %s "$f")"; done
  } > "$DIR/MANIFEST"
  # what ray and ray[serve] require (Requires-Dist without a marker, or with extra == "serve"), as pip reads it
  python3 - "$wheel" > "$DIR/requires.txt" <<'EOF'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    for line in wheel.read(meta).decode().splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec, _, marker = line.split(":", 1)[1].partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if marker.strip() and not (extra and extra.group(1) == "serve"):
            continue
        print(spec.strip())
EOF
  if [ "${SKIP_DEPS:-0}" != 1 ]; then
    python3 -m pip download -q --only-binary=:all: --python-version "$PY" --implementation cp "${PLATFORMS[@]}" \
      -d "$DIR/deps" -r "$DIR/requires.txt"
    # leave out what the H200 has: a wheel's project name normalised (PyYAML, prometheus_client) against $PRESENT
    python3 - "$DIR/deps" $PRESENT <<'EOF'
import re, sys
from pathlib import Path
present = {re.sub(r"[-_.]+", "-", name).lower() for name in sys.argv[2:]}
for wheel in Path(sys.argv[1]).glob("*.whl"):
    if re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower() in present:
        wheel.unlink()
EOF
  fi
  echo "ray_wheel_parts: $(basename "$wheel") in $(parts | wc -l) parts under $DIR/parts; deps: $(ls "$DIR"/deps 2>/dev/null \
| wc -l) wheels, $(du -sh "$DIR/deps" | cut -f1)"
  cat "$DIR/MANIFEST"
  ;;
receive)
  n=${2:-}
  [[ "$n" =~ ^[0-9]+$ ]] || die "receive takes the part's number: receive 0, receive 1, ..."
  manifest
  total=$(parts | wc -l)
  [ "$n" -lt "$total" ] || die "the manifest has $total parts (0..$((total - 1))), not $n"
  mkdir -p "$PARTS_HOME"
  check_parts_before "$n"
  read -r name hash < <(parts | sed -n "$((n + 1))p")
  [ -f "$DIR/parts/$name" ] || die "$DIR/parts/$name was not carried: carry [\"$DIR/parts/$name\", \"$DIR/MANIFEST\"]"
  cp "$DIR/parts/$name" "$PARTS_HOME/$name"
  [ "$(sha "$PARTS_HOME/$name")" = "$hash" ] || die "part $n arrived damaged (sha256 differs): carry it again" 3
  echo "ray_wheel_parts: part $n of $total ($name) is in $PARTS_HOME"
  ;;
install)
  manifest
  total=$(parts | wc -l)
  check_parts_before "$total"
  read -r _ wheel_name wheel_hash _ < <(awk '$1 == "wheel"' "$DIR/MANIFEST")
  mkdir -p "$HOME/ray-wheel"
  parts | while read -r name _; do cat "$PARTS_HOME/$name"; done > "$HOME/ray-wheel/$wheel_name"
  [ "$(sha "$HOME/ray-wheel/$wheel_name")" = "$wheel_hash" ] || die "the joined wheel's sha256 differs from the manifest's" 3
  deps=()
  if ls "$DIR"/deps/*.whl >/dev/null 2>&1; then deps=("$DIR"/deps/*.whl); fi
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$TARGET" \
    "$HOME/ray-wheel/$wheel_name" "${deps[@]}"
  export PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}"
  [ -f "$DIR/requires.txt" ] || die "no $DIR/requires.txt: carry it with the manifest"
  names=$(sed -E 's/^([A-Za-z0-9_.-]+).*/\1/' "$DIR/requires.txt" | sort -u | tr '\n' ' ')
  # one pip show of every requirement: what it does not find is missing here
  missing=$(python3 -m pip show $names 2>&1 >/dev/null | sed -n 's/.*Package(s) not found: //p' || true)
  if [ -n "$missing" ]; then
    die "installed ray into $TARGET, but these requirements are missing: $missing (carry their wheels in $DIR/deps)" 4
  fi
  python3 -c "import ray, ray.serve; print('ray', ray.__version__, 'and ray.serve import from', ray.__file__)"
  echo "ray_wheel_parts: installed into $TARGET: export PYTHONPATH=\"$TARGET:\$PYTHONPATH\""
  ;;
*)
  sed -n '2,30p' "$0" >&2
  die "say prepare, receive N or install"
  ;;
esac
