#!/usr/bin/env bash
# Install ccusage (pinned) into $REPO/.cache/ccusage-$VERSION: the usage tests compare our token and
# cost figures with it. Idempotent. Exits 1 with a loud warning when it cannot install or run it.
# 20.0.24 is the newest version whose native linux binary (@ccusage/ccusage-linux-x64) the npm
# registry serves; 20.0.26's is missing there.
set -uo pipefail
VERSION=20.0.24
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$REPO/.cache/ccusage-$VERSION"
BIN="$DEST/node_modules/.bin/ccusage"

warn() {
  echo "" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "!! WARNING: ccusage $VERSION NOT INSTALLED: $*" >&2
  echo "!! The ccusage comparison tests will fail under CI (CCUSAGE NOT AVAILABLE)." >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "" >&2
  exit 1
}

installed_ok() {
  [ -x "$BIN" ] || return 1
  "$BIN" --version 2>/dev/null | grep -q "$VERSION" || return 1
  echo "ccusage: $VERSION ready at $BIN" >&2
}

installed_ok && exit 0

command -v npm >/dev/null 2>&1 || warn "npm is not on PATH"
mkdir -p "$DEST" || warn "cannot create $DEST"
[ -f "$DEST/package.json" ] || echo '{"name":"slsp-ccusage","private":true}' >"$DEST/package.json"
echo "ccusage: installing ccusage@$VERSION into $DEST ..." >&2
if ! npm install --prefix "$DEST" --no-audit --no-fund --no-save --loglevel=error "ccusage@$VERSION" >&2; then
  warn "npm install failed"
fi
installed_ok || warn "installed, but $BIN does not run or is not version $VERSION"
