# Sourced by the scripts that measure the shipped CPU runs: installs the engine, builds the
# release binary if missing, and starts llama.cpp's server (xllamacpp, SmolLM2-135M Q4_1, 2
# threads) on loopback, stopped when the calling script exits.
# Usage: start_cpu_server PORT N_CTX SLOTS; then VERSION holds the xllamacpp version.
start_cpu_server() {
  local port=$1 n_ctx=$2 slots=$3
  bash scripts/install-engine.sh
  [ -x "$SITE" ] || cargo build --release --locked
  LOG=$(mktemp)
  .venv/bin/python scripts/llama-server.py --port "$port" --n-ctx "$n_ctx" --parallel "$slots" --threads 2 --lifetime 1800 >"$LOG" 2>&1 &
  SERVER=$!
  trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -f "$LOG"' EXIT
  for _ in $(seq 1 600); do grep -q '^ready ' "$LOG" && break; kill -0 $SERVER 2>/dev/null || { cat "$LOG"; exit 1; }; sleep 0.2; done
  grep -q '^ready ' "$LOG" || { echo "llama-server did not start" >&2; tail -20 "$LOG" >&2; exit 1; }
  VERSION=$(.venv/bin/pip show xllamacpp | sed -n 's/^Version: //p')
}
