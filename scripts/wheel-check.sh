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
PASSED=0
FAILED=0
# check WHAT COMMAND...: runs the command (a shell string), counts it, never stops the script.
check() {
  local what=$1; shift
  # pipefail: a failing command at the head of a pipe (`site man | groff | ...`) fails the check.
  if bash -o pipefail -c "$*" >"$WORK/check.log" 2>&1; then
    echo "ok   $what"; PASSED=$((PASSED + 1))
  else
    echo "FAIL $what"; sed 's/^/     /' "$WORK/check.log" | tail -20; FAILED=$((FAILED + 1))
  fi
}

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
want="site $(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["packages"][0]["version"])')"

step "cargo install --path ."
cargo install --locked --path . --root "$WORK/cargo-root" --target-dir "$ROOT/target" --quiet

# The same checks of both installed binaries, each in a copy of the shipped data away from
# the checkout.
for kind in wheel cargo; do
  if [ "$kind" = wheel ]; then BIN=$SITE; else BIN="$WORK/cargo-root/bin/site"; fi
  DIR="$WORK/site-$kind"
  cp -r "$WORK/site" "$DIR"
  step "the $kind's site in $DIR"
  check "$kind: --version names $want" "\"$BIN\" --version | grep -q '^$want'"
  check "$kind: check passes on the shipped data" "cd '$DIR' && \"$BIN\" check"
  check "$kind: build writes the pages" "cd '$DIR' && \"$BIN\" build && test -f public/index.html && test -f public/static/style.css"
  check "$kind: the front page answers at the targets" "grep -q 'Best at your targets' '$DIR/public/index.html'"
  check "$kind: bash completions parse and offer no hidden command" "\"$BIN\" completions bash > '$WORK/c.bash' && bash -n '$WORK/c.bash' && ! grep -q simulate-engine '$WORK/c.bash'"
  check "$kind: the manual page is valid roff" "\"$BIN\" man | groff -man -z -ww -Tutf8 2>&1 | (! grep .)"
done
check "wheel: ships no simulated engine (off unless asked for)" "! \"$SITE\" simulate-engine --help"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
