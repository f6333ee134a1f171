# Sourced by .ci/run (bash, as root, under `set -euo pipefail`) on a fresh Debian machine: install
# and start the real database servers the SQL label tests in tests/test_adversarial_sql.py run the
# corpus on, and export the variables those tests read:
#
#   AGENTOS_TEST_POSTGRES_DSN    psycopg conninfo: PostgreSQL (15 on bookworm) on 127.0.0.1, user
#                                postgres with a password (kept in $AGENTOS_CI_PG_PASSWORD_FILE)
#   AGENTOS_TEST_MARIADB_SOCKET  MariaDB's unix socket; root logs in by unix_socket authentication
#
# Idempotent: packages are installed only if missing, a server that already answers is left
# alone, and sourcing it twice exports the same values. Locally (as root):
#   source .ci/services.sh && .venv/bin/python -m pytest tests/test_adversarial_sql.py -q
# Everything lives in functions with local variables; the only names this leaves in the caller's
# shell are the two exports and the agentos_ci_* functions.

AGENTOS_CI_PG_PASSWORD_FILE="${AGENTOS_CI_PG_PASSWORD_FILE:-/var/lib/postgresql/agentos-ci-password}"

agentos_ci_log() { echo "[services] $*" >&2; }

# agentos_ci_wait SECONDS WHAT COMMAND...: run COMMAND every 0.5 s until it succeeds.
agentos_ci_wait() {
  local seconds=$1 what=$2 tries
  shift 2
  for ((tries = 0; tries < seconds * 2; tries++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  agentos_ci_log "$what did not answer within ${seconds} s"
  return 1
}

agentos_ci_install() {
  local missing=()
  command -v pg_ctlcluster >/dev/null 2>&1 && compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || missing+=(postgresql)
  command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
  # The sqlite3 shell holds a real EXCLUSIVE lock from another process in tests/test_audit_durability.py.
  command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
  if ((${#missing[@]} == 0)); then
    agentos_ci_log "postgresql, mariadb-server and sqlite3 already installed"
    return 0
  fi
  agentos_ci_log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

agentos_ci_postgres() {
  local version port status password
  version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {found = 1} END {exit !found}'; then
    agentos_ci_log "creating PostgreSQL $version cluster main"
    pg_createcluster "$version" main >/dev/null
  fi
  read -r port status < <(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $3, $4}')
  if [[ $status != online* ]]; then
    agentos_ci_log "starting PostgreSQL $version on port $port"
    pg_ctlcluster "$version" main start
  fi
  agentos_ci_wait 60 "PostgreSQL $version" pg_isready -q -h 127.0.0.1 -p "$port"
  # One password per machine, kept root-only, so that re-sourcing gives the same DSN to anything
  # that already holds it. Set through peer authentication on the socket, fed on stdin so it
  # never appears in a process list.
  if [[ ! -s $AGENTOS_CI_PG_PASSWORD_FILE ]]; then
    (umask 077 && python3 -c 'import secrets; print(secrets.token_hex(16))' >"$AGENTOS_CI_PG_PASSWORD_FILE")
  fi
  password=$(<"$AGENTOS_CI_PG_PASSWORD_FILE")
  printf "ALTER ROLE postgres PASSWORD '%s';\n" "$password" |
    runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" -d postgres >/dev/null
  export AGENTOS_TEST_POSTGRES_DSN="host=127.0.0.1 port=$port user=postgres password=$password dbname=postgres connect_timeout=10"
  PGPASSWORD=$password psql -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc "SELECT 1" >/dev/null
  agentos_ci_log "PostgreSQL $(PGPASSWORD=$password psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc 'SHOW server_version') on 127.0.0.1:$port"
}

agentos_ci_mariadb() {
  local socket
  socket=$(my_print_defaults --mysqld | sed -n 's/^--socket=//p' | tail -n 1)
  socket=${socket:-/run/mysqld/mysqld.sock}
  if ! mariadb-admin --socket="$socket" --user=root ping >/dev/null 2>&1; then
    mkdir -p "$(dirname "$socket")" /var/log/mysql
    chown mysql:mysql "$(dirname "$socket")" /var/log/mysql
    if [[ ! -d /var/lib/mysql/mysql ]]; then
      agentos_ci_log "initialising the MariaDB data directory"
      mariadb-install-db --user=mysql --datadir=/var/lib/mysql --auth-root-authentication-method=socket >/dev/null
    fi
    agentos_ci_log "starting MariaDB on $socket"
    # Detached from this shell (its own session, no terminal), so it outlives .ci/run's steps.
    setsid mariadbd --user=mysql --socket="$socket" --log-error=/var/log/mysql/agentos-ci.err </dev/null >/dev/null 2>&1 &
    agentos_ci_wait 60 "MariaDB" mariadb-admin --socket="$socket" --user=root ping
  fi
  mariadb --socket="$socket" --user=root -e "SELECT 1" >/dev/null
  export AGENTOS_TEST_MARIADB_SOCKET=$socket
  agentos_ci_log "MariaDB $(mariadb --socket="$socket" --user=root -N -e 'SELECT VERSION()') on $socket"
}

agentos_ci_services() {
  local started=$SECONDS
  # mariadbd and runuser live in sbin, which a CI runner's PATH may lack (local: the caller's
  # PATH is left as it was).
  local PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
  agentos_ci_install
  agentos_ci_postgres
  agentos_ci_mariadb
  agentos_ci_log "database servers ready in $((SECONDS - started)) s"
}

agentos_ci_services
