#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster on 127.0.0.1:55432 for the store tests and prints its URL.
#
#   .ci/postgres.sh          start (installing PostgreSQL first if needed) and print the URL
#   . .ci/postgres.sh        the same, and export DEER_GO_TEST_DATABASE_URL into the calling shell
#   .ci/postgres.sh stop     stop the cluster and delete its data directory
#
# Starting is idempotent: a cluster already answering on the port is reused.

_deergo_pg_main() {
  local port=55432 db=deergo_test
  local url="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"
  local state="/tmp/deergo-pg-${port}.dir" # remembers the data directory for "stop"

  _deergo_pg_bindir() {
    local d
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
      dirname "$(readlink -f "$(command -v pg_ctl)")"
      return 0
    fi
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
  }

  # as_pg runs a command as the postgres user: initdb refuses to run as root.
  _deergo_pg_as() {
    if [ "$(id -u)" = 0 ]; then
      if command -v runuser >/dev/null 2>&1; then
        runuser -u postgres -- "$@"
      else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
      fi
    else
      "$@"
    fi
  }

  local bindir
  bindir=$(_deergo_pg_bindir) || bindir=""

  if [ "${1:-start}" = stop ]; then
    if [ -f "$state" ] && [ -n "$bindir" ]; then
      local dir
      dir=$(cat "$state")
      _deergo_pg_as "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop || true
      rm -rf "$dir" "$state"
    fi
    return 0
  fi

  if [ -z "$bindir" ] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
      echo "postgres.sh: PostgreSQL is not installed and installing it needs root" >&2
      return 1
    fi
    echo "postgres.sh: installing PostgreSQL" >&2
    apt-get update -qq || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || return 1
    bindir=$(_deergo_pg_bindir) || { echo "postgres.sh: initdb not found after install" >&2; return 1; }
  fi

  if ! "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
    local dir
    dir=$(mktemp -d /tmp/deergo-pg.XXXXXX) || return 1
    if [ "$(id -u)" = 0 ]; then
      chown postgres: "$dir" || return 1
    fi
    _deergo_pg_as "$bindir/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=trust \
      -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      return 1
    }
    # fsync off: the cluster is thrown away, so durability only costs test time.
    _deergo_pg_as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-k /tmp -p ${port} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off" start >&2 || {
      cat "$dir/server.log" >&2
      return 1
    }
    echo "$dir" >"$state"
  fi

  local exists
  exists=$("$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '${db}'") || return 1
  if [ "$exists" != 1 ]; then
    "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db" || return 1
  fi

  export DEER_GO_TEST_DATABASE_URL="$url"
  echo "$url"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  _deergo_pg_main "$@"
else
  _deergo_pg_main "$@"
  _deergo_pg_rc=$?
  unset -f _deergo_pg_main _deergo_pg_bindir _deergo_pg_as
  return "$_deergo_pg_rc"
fi
