#!/usr/bin/env bash
# Neovim for the Neovim client's headless test (tests/test_nvim_client.py).
# Installs Debian's `neovim` package (0.7.2 on bookworm) with apt when `nvim` is not on PATH.
# Idempotent: does nothing when nvim is already there. If it cannot install (no root, no apt,
# no network), it prints a loud warning and exits 1: the Neovim test must not be skipped silently.
set -uo pipefail

warn() {
  echo "" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "!! WARNING: Neovim NOT INSTALLED: $*" >&2
  echo "!! The Neovim client test will be SKIPPED (NEOVIM NOT AVAILABLE)." >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "" >&2
  exit 1
}

if command -v nvim >/dev/null 2>&1; then
  echo "nvim: $(nvim --version 2>/dev/null | head -n 1) already installed at $(command -v nvim)" >&2
  exit 0
fi

command -v apt-get >/dev/null 2>&1 || warn "apt-get is not available (not a Debian-like system?)"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    warn "not root and no password-less sudo"
  fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "nvim: installing Debian's neovim package with apt ..." >&2
# Refresh the package lists only when the package is unknown to apt (keeps re-runs cheap).
if ! apt-cache show neovim >/dev/null 2>&1; then
  $SUDO apt-get update >&2 || warn "apt-get update failed"
fi
$SUDO apt-get install -y --no-install-recommends neovim >&2 || warn "apt-get install neovim failed"

command -v nvim >/dev/null 2>&1 || warn "neovim installed, but nvim is not on PATH"
echo "nvim: $(nvim --version | head -n 1) ready at $(command -v nvim)" >&2
