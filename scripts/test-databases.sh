#!/usr/bin/env bash
# PostgreSQL and MariaDB for ExeSQL's tests: private servers on 127.0.0.1 with their data
# under ${TMPDIR:-/tmp}/canvas-test-db, a user `canvas` (password `canvas`) and a database
# `canvas_test` in each.
#
#   scripts/test-databases.sh start   install what is missing, start both, print the env lines
#   scripts/test-databases.sh stop    stop both (data is kept)
#   scripts/test-databases.sh env     print the env lines
#
# Only the env lines go to stdout (CANVAS_TEST_PG=..., CANVAS_TEST_MYSQL=...); progress goes
# to stderr, so `.ci/run` can read stdout. Idempotent: a running server is left as it is.
# Ports: CANVAS_TEST_PG_PORT (default 55432), CANVAS_TEST_MYSQL_PORT (default 53306).
set -euo pipefail

BASE="${TMPDIR:-/tmp}/canvas-test-db"
PG_PORT="${CANVAS_TEST_PG_PORT:-55432}"
MY_PORT="${CANVAS_TEST_MYSQL_PORT:-53306}"
PG_DIR="$BASE/pg"
MY_DIR="$BASE/mysql"
MY_SOCK="$MY_DIR/mysqld.sock"

log() { echo "test-databases: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# Servers must not run as root: as root, run them as their system users.
if [ "$(id -u)" = 0 ]; then
  PG_USER=postgres
  MY_USER=mysql
else
  PG_USER="$(id -un)"
  MY_USER="$(id -un)"
fi

as_user() {
  local user="$1"
  shift
  if [ "$(id -un)" = "$user" ]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$user" -- "$@"
  else
    su -s /bin/sh "$user" -c "$(printf '%q ' "$@")"
  fi
}

pg_bin() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

first_cmd() {
  local c
  for c in "$@"; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

install_missing() {
  local pkgs=()
  [ -n "$(pg_bin || true)" ] || pkgs+=(postgresql)
  first_cmd mariadbd mysqld >/dev/null || pkgs+=(mariadb-server)
  first_cmd mariadb-install-db mysql_install_db >/dev/null || pkgs+=(mariadb-server)
  [ ${#pkgs[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "missing ${pkgs[*]} and no apt-get to install them"
  [ "$(id -u)" = 0 ] || die "missing ${pkgs[*]}; install them (apt-get install postgresql mariadb-server) or run as root"
  log "installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Debian's postinst scripts must not start the system services (policy-rc.d 101).
  local policy=/usr/sbin/policy-rc.d created_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    created_policy=1
  fi
  if ! apt-get install -y --no-install-recommends "${pkgs[@]}" >&2; then
    apt-get update >&2
    apt-get install -y --no-install-recommends "${pkgs[@]}" >&2
  fi
  if [ -n "$created_policy" ]; then rm -f "$policy"; fi
  return 0
}

prepare_base() {
  mkdir -p "$BASE" "$PG_DIR" "$MY_DIR"
  chmod 755 "$BASE"
  if [ "$(id -u)" = 0 ]; then
    chown "$PG_USER": "$PG_DIR"
    chown "$MY_USER": "$MY_DIR"
  fi
  chmod 700 "$PG_DIR" "$MY_DIR"
}

pg_running() {
  local bin
  bin="$(pg_bin)" || return 1
  [ -f "$PG_DIR/data/PG_VERSION" ] && as_user "$PG_USER" "$bin/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1
}

pg_psql() {
  as_user "$PG_USER" "$(pg_bin)/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_DIR" -p "$PG_PORT" -U postgres "$@"
}

start_pg() {
  local bin
  bin="$(pg_bin)" || die "PostgreSQL server binaries not found under /usr/lib/postgresql"
  if ! pg_running; then
    if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
      rm -rf "$PG_DIR/data" # a half-made cluster from an interrupted start
      log "initialising PostgreSQL in $PG_DIR/data"
      as_user "$PG_USER" "$bin/initdb" -D "$PG_DIR/data" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >&2
    fi
    log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
    as_user "$PG_USER" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_DIR" \
      start >&2 || {
      tail -n 20 "$PG_DIR/server.log" >&2 || true
      die "PostgreSQL did not start"
    }
  fi
  if ! pg_psql -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'canvas'" | grep -q 1; then
    pg_psql -d postgres -c "CREATE ROLE canvas LOGIN PASSWORD 'canvas'"
  fi
  if ! pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'canvas_test'" | grep -q 1; then
    pg_psql -d postgres -c "CREATE DATABASE canvas_test OWNER canvas"
  fi
}

stop_pg() {
  if pg_running; then
    log "stopping PostgreSQL"
    as_user "$PG_USER" "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >&2
  fi
}

my_client() { first_cmd mariadb mysql; }
my_admin() { first_cmd mariadb-admin mysqladmin; }

my_running() {
  local admin
  admin="$(my_admin)" || return 1
  [ -S "$MY_SOCK" ] && as_user "$MY_USER" "$admin" --no-defaults -S "$MY_SOCK" -u "$MY_USER" \
    --connect-timeout=2 ping >/dev/null 2>&1
}

my_sql() {
  as_user "$MY_USER" "$(my_client)" --no-defaults -S "$MY_SOCK" -u "$MY_USER" -e "$1"
}

start_mysql() {
  local server install
  server="$(first_cmd mariadbd mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -n 1)" ||
    die "mariadbd not found"
  [ -n "$server" ] || die "mariadbd not found"
  if ! my_running; then
    # The server's temporary files stay in its own directory ($TMPDIR may not be
    # writable by the mysql user).
    mkdir -p "$MY_DIR/tmp"
    if [ "$(id -u)" = 0 ]; then chown "$MY_USER": "$MY_DIR/tmp"; fi
    if [ ! -d "$MY_DIR/data/mysql" ]; then
      rm -rf "$MY_DIR/data" # half-made data from an interrupted start
      install="$(first_cmd mariadb-install-db mysql_install_db)" || die "mariadb-install-db not found"
      log "initialising MariaDB in $MY_DIR/data"
      # As root the installer itself drops to --user (and can set up its PAM helper).
      TMPDIR="$MY_DIR/tmp" "$install" --no-defaults --datadir="$MY_DIR/data" --user="$MY_USER" \
        --tmpdir="$MY_DIR/tmp" --auth-root-authentication-method=socket --skip-test-db >&2
    fi
    log "starting MariaDB on 127.0.0.1:$MY_PORT"
    rm -f "$MY_SOCK"
    # setsid: the server outlives this script and ignores the caller's terminal signals.
    TMPDIR="$MY_DIR/tmp" as_user "$MY_USER" setsid "$server" --no-defaults \
      --datadir="$MY_DIR/data" --tmpdir="$MY_DIR/tmp" --socket="$MY_SOCK" --pid-file="$MY_DIR/mysqld.pid" --log-error="$MY_DIR/server.log" \
      --port="$MY_PORT" --bind-address=127.0.0.1 --skip-networking=0 --skip-name-resolve \
      </dev/null >/dev/null 2>&1 &
    local i
    for i in $(seq 1 120); do
      my_running && break
      sleep 0.5
    done
    my_running || {
      tail -n 20 "$MY_DIR/server.log" >&2 || true
      die "MariaDB did not start"
    }
  fi
  my_sql "CREATE DATABASE IF NOT EXISTS canvas_test;
    CREATE USER IF NOT EXISTS 'canvas'@'127.0.0.1' IDENTIFIED BY 'canvas';
    CREATE USER IF NOT EXISTS 'canvas'@'localhost' IDENTIFIED BY 'canvas';
    GRANT ALL PRIVILEGES ON canvas_test.* TO 'canvas'@'127.0.0.1';
    GRANT ALL PRIVILEGES ON canvas_test.* TO 'canvas'@'localhost';"
}

stop_mysql() {
  if my_running; then
    log "stopping MariaDB"
    as_user "$MY_USER" "$(my_admin)" --no-defaults -S "$MY_SOCK" -u "$MY_USER" shutdown >&2
  fi
}

print_env() {
  echo "CANVAS_TEST_PG=postgres://canvas:canvas@127.0.0.1:$PG_PORT/canvas_test"
  echo "CANVAS_TEST_MYSQL=mysql://canvas:canvas@127.0.0.1:$MY_PORT/canvas_test"
}

case "${1:-}" in
  start)
    install_missing
    prepare_base
    start_pg
    start_mysql
    print_env
    ;;
  stop)
    stop_pg
    stop_mysql
    ;;
  env)
    print_env
    ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
