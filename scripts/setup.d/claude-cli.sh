#!/usr/bin/env bash
# Install the real Claude Code CLI (pinned) into $REPO/.cache/claude-cli for the real-CLI tests.
# Idempotent: does nothing when the pinned version is already there. Fails the setup (exit 1)
# with a loud warning when it cannot install: the real-CLI tests are our main evidence.
set -uo pipefail
VERSION=2.1.328
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$REPO/.cache/claude-cli"

warn() {
  echo "" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "!! WARNING: real Claude Code CLI $VERSION NOT INSTALLED: $*" >&2
  echo "!! The real-CLI tests will be SKIPPED (REAL CLI NOT AVAILABLE)." >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "" >&2
  exit 1
}

find_bin() {
  local c
  for c in \
    "$DEST/node_modules/@anthropic-ai/claude-code-linux-x64/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code-linux-x64-musl/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code-linux-arm64/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code-linux-arm64-musl/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code-darwin-arm64/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code-darwin-x64/claude" \
    "$DEST/node_modules/@anthropic-ai/claude-code/bin/claude.exe"; do
    if [ -x "$c" ] && [ "$(stat -c %s "$c" 2>/dev/null || stat -f %z "$c")" -gt 1000000 ]; then
      echo "$c"
      return 0
    fi
  done
  return 1
}

installed_ok() {
  local bin
  bin="$(find_bin)" || return 1
  "$bin" --version 2>/dev/null | grep -q "^$VERSION " || return 1
  ln -sf "$bin" "$DEST/claude"
  echo "claude-cli: $VERSION ready at $DEST/claude" >&2
}

installed_ok && exit 0

command -v npm >/dev/null 2>&1 || warn "npm is not on PATH"
mkdir -p "$DEST" || warn "cannot create $DEST"
[ -f "$DEST/package.json" ] || echo '{"name":"slsp-claude-cli","private":true}' >"$DEST/package.json"
echo "claude-cli: installing @anthropic-ai/claude-code@$VERSION into $DEST (about 370 MB) ..." >&2
# The package's engines field asks for node>=22, but the CLI is a native binary: ignore that, and
# skip the postinstall script (it only copies the platform binary, which we find ourselves).
if ! npm install --prefix "$DEST" --no-audit --no-fund --no-save --ignore-scripts \
      --engine-strict=false --loglevel=error "@anthropic-ai/claude-code@$VERSION" >&2; then
  warn "npm install failed"
fi
installed_ok || warn "installed, but no working binary of version $VERSION found under $DEST"
