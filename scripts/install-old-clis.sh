#!/usr/bin/env bash
# Install other Claude Code CLIs into $SLSP_OLD_CLI_DIR/claude-cli-<version> (default $REPO/.cache): the older
# ones of the versions corpus (0.2.109 to 2.1.0, each a cli.js run by Node; scripts/make_versions_corpus.py looks
# there too) and newer native ones (`./scripts/install-old-clis.sh 2.1.332` for scripts/make_newest_corpus.py; the
# suite's pinned 2.1.328 is scripts/setup.d/claude-cli.sh's). Give versions as arguments to install only those.
# Idempotent: skips a version already there. Exits non-zero when an install fails.
set -euo pipefail
VERSIONS="${*:-0.2.109 1.0.0 1.0.51 1.0.128 2.0.0 2.0.77 2.1.0}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="${SLSP_OLD_CLI_DIR:-$REPO/.cache}"
command -v npm >/dev/null 2>&1 || { echo "claude-cli-old: npm is not on PATH" >&2; exit 1; }
runs() {  # runs VERSION CLI: the cli.js (run by Node) or the native binary answers --version with VERSION
  case "$2" in
    *.js) node "$2" --version 2>/dev/null | grep -q "^$1 " ;;
    *) [ -x "$2" ] && "$2" --version 2>/dev/null | grep -q "^$1 " ;;
  esac
}
for version in $VERSIONS; do
  dest="$ROOT/claude-cli-$version"
  case "$version" in
    0.* | 1.* | 2.0.* | 2.1.0) cli="$dest/node_modules/@anthropic-ai/claude-code/cli.js" ;;
    *) cli="$dest/node_modules/@anthropic-ai/claude-code-linux-x64/claude" ;;  # 2.1.x: a native binary
  esac
  if runs "$version" "$cli"; then
    echo "claude-cli-old: $version ready at $cli" >&2
    continue
  fi
  mkdir -p "$dest"
  [ -f "$dest/package.json" ] || echo '{"name":"slsp-claude-cli-old","private":true}' >"$dest/package.json"
  echo "claude-cli-old: installing @anthropic-ai/claude-code@$version into $dest ..." >&2
  # a native CLI's engines field asks for node>=22 and its postinstall only copies the binary we find ourselves
  npm install --prefix "$dest" --no-audit --no-fund --no-save --ignore-scripts --engine-strict=false \
    --loglevel=error "@anthropic-ai/claude-code@$version" >&2
  runs "$version" "$cli" || {
    echo "claude-cli-old: $version installed but $cli does not run" >&2
    exit 1
  }
  echo "claude-cli-old: $version ready at $cli" >&2
done
