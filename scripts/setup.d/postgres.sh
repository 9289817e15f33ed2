#!/usr/bin/env bash
# Make PostgreSQL's initdb and pg_ctl available for the session-store tests (tests/pg.py starts a
# throwaway server with them). Installs Debian's `postgresql` package when they are missing,
# without creating or starting a system cluster. Exits non-zero when they cannot be had: under
# CI the tests that need PostgreSQL fail rather than skip.
set -uo pipefail

have_bins() {
  local name
  for name in initdb pg_ctl; do
    command -v "$name" >/dev/null 2>&1 && continue
    compgen -G "/usr/lib/postgresql/*/bin/$name" >/dev/null || return 1
  done
}

if have_bins; then
  echo "postgres: initdb and pg_ctl present" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "postgres: initdb/pg_ctl missing and no apt-get to install them; install PostgreSQL" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
# No system cluster: the tests make their own in a temporary folder.
$SUDO mkdir -p /etc/postgresql-common
if ! grep -q "^create_main_cluster" /etc/postgresql-common/createcluster.conf 2>/dev/null; then
  echo "create_main_cluster = false" | $SUDO tee -a /etc/postgresql-common/createcluster.conf >/dev/null
fi
echo "postgres: installing Debian's postgresql package ..." >&2
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -q >&2 && $SUDO apt-get install -y -q --no-install-recommends \
      -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold postgresql >&2; }; then
  echo "postgres: apt-get install postgresql FAILED" >&2
  exit 1
fi
if ! have_bins; then
  echo "postgres: installed, but initdb/pg_ctl still not found" >&2
  exit 1
fi
echo "postgres: ready" >&2
