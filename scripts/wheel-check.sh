#!/usr/bin/env bash
# Installs `site` the way its users do and checks the installed binary away from the
# checkout: maturin (from PyPI) builds the wheel, a fresh virtual environment outside the
# checkout installs it, and the installed `site` prints its version, builds and checks a copy
# of the shipped data, and prints completions and a manual page. Also `cargo install --path`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

step() { echo; echo "== wheel: $*"; }

step "maturin"
python3 -m venv "$WORK/build-env"
"$WORK/build-env/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2"

step "build the wheel (release, no simulator)"
"$WORK/build-env/bin/maturin" build --release --locked --out "$WORK/dist"
ls -l "$WORK/dist"

step "install it into a fresh environment outside the checkout"
python3 -m venv "$WORK/user-env"
"$WORK/user-env/bin/pip" install --quiet --disable-pip-version-check "$WORK"/dist/*.whl
SITE="$WORK/user-env/bin/site"
[ -x "$SITE" ] || { echo "wheel: the wheel installed no site binary" >&2; exit 1; }
ls -l "$SITE"

step "the installed site, with no checkout around it"
mkdir "$WORK/site" && cp -r data "$WORK/site/data" && cp site.toml "$WORK/site/"
cd "$WORK/site"
want="site $(cd "$ROOT" && cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["version"])')"
got=$("$SITE" --version)
case "$got" in "$want"*) echo "ok   $got" ;; *) echo "wheel: --version says $got, want $want..." >&2; exit 1 ;; esac
"$SITE" check
"$SITE" build
[ -f public/index.html ] && [ -f public/static/style.css ] || { echo "wheel: the installed site built no pages" >&2; exit 1; }
grep -q "Best at your targets" public/index.html || { echo "wheel: the front page lacks its answer" >&2; exit 1; }
"$SITE" completions bash | bash -n
"$SITE" man | groff -man -z -ww -Tutf8
if "$SITE" simulate-engine --help >/dev/null 2>&1; then
  echo "wheel: the wheel ships the simulated engine (it must be off unless asked for)" >&2; exit 1
fi
echo "ok   the wheel's site builds, checks and documents the shipped data; no simulator"
cd "$ROOT"

step "cargo install --path ."
cargo install --locked --path . --root "$WORK/cargo-root" --target-dir "$ROOT/target" --quiet
"$WORK/cargo-root/bin/site" --version
echo "4 passed, 0 failed"
