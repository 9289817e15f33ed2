#!/usr/bin/env bash
# Install older Claude Code CLIs (0.2.109 to 2.1.0, each a cli.js run by Node) into
# $SLSP_OLD_CLI_DIR/claude-cli-<version> (default $REPO/.cache) for the versions corpus
# (scripts/make_versions_corpus.py, which looks there too). Give versions as arguments to install only those.
# Idempotent: skips a version already there. Exits non-zero when an install fails.
set -euo pipefail
VERSIONS="${*:-0.2.109 1.0.0 1.0.51 1.0.128 2.0.0 2.0.77 2.1.0}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="${SLSP_OLD_CLI_DIR:-$REPO/.cache}"
command -v npm >/dev/null 2>&1 || { echo "claude-cli-old: npm is not on PATH" >&2; exit 1; }
for version in $VERSIONS; do
  dest="$ROOT/claude-cli-$version"
  cli="$dest/node_modules/@anthropic-ai/claude-code/cli.js"
  if [ -f "$cli" ] && node "$cli" --version 2>/dev/null | grep -q "^$version "; then
    echo "claude-cli-old: $version ready at $cli" >&2
    continue
  fi
  mkdir -p "$dest"
  [ -f "$dest/package.json" ] || echo '{"name":"slsp-claude-cli-old","private":true}' >"$dest/package.json"
  echo "claude-cli-old: installing @anthropic-ai/claude-code@$version into $dest ..." >&2
  npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error \
    "@anthropic-ai/claude-code@$version" >&2
  node "$cli" --version 2>/dev/null | grep -q "^$version " || {
    echo "claude-cli-old: $version installed but $cli does not run" >&2
    exit 1
  }
  echo "claude-cli-old: $version ready at $cli" >&2
done
