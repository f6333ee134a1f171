# Sourced by .ci/run (bash, set -euo pipefail, as root on a fresh Debian machine): the headless
# browser tests/test_dashboard.py drives. Installs Debian's chromium (and a font, so the
# screenshots have text) only if missing, then exports AGENTOS_CHROMIUM for the test, which fails
# instead of skipping when CI=true and the browser is missing.
if ! dpkg -s chromium fonts-liberation >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends chromium fonts-liberation
fi
AGENTOS_CHROMIUM="$(command -v chromium)"
export AGENTOS_CHROMIUM
echo "dashboard test browser: $("$AGENTOS_CHROMIUM" --version 2>/dev/null)"
