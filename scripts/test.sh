#!/usr/bin/env bash
# Installs everything the tests need, then runs them: `bash scripts/test.sh [pytest args]`.
#
# - Debian packages: robocode (the real RoboRumble client the end-to-end tests drive), chromium and
#   chromium-driver (the browser tests drive Debian's Chromium through Selenium), faketime (the
#   shifted-clock run below), nginx (the reverse-proxy tests run it as a plain process on a
#   loopback port; its service is not used), when missing. Needs root (or sudo); without them
#   those tests are skipped, except under CI where they must run.
# - Python packages: rumble and its test extra, into ./.venv (created if missing).
#
# Without arguments it checks the style (ruff's linter and formatter over rumble/, tests/ and
# scripts/, then mypy over rumble/, as configured in pyproject.toml), runs the end-to-end tests in
# three processes, then every other test in two with the clock 400 days ahead (faketime). Every step
# runs whatever the one before it gave; the exit status is 1 if any of them failed, and the last
# lines say which. With arguments it runs pytest with them, once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

apt_packages=()
[ -e /usr/share/java/roborumble.jar ] || apt_packages+=(robocode)
[ -x /usr/bin/chromium ] || apt_packages+=(chromium)  # the browser tests (tests/e2e/test_browser.py)
[ -x /usr/bin/chromedriver ] || apt_packages+=(chromium-driver)
command -v faketime >/dev/null 2>&1 || apt_packages+=(faketime)  # the shifted-clock run
[ -x /usr/sbin/nginx ] || apt_packages+=(nginx)  # tests/e2e/test_proxy.py, scripts/hostile_mix.py --proxy
if [ ${#apt_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo_cmd=() ; elif command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo) ; else sudo_cmd=(none); fi
  if [ "${sudo_cmd[*]-}" = none ]; then
    echo "scripts/test.sh: cannot install ${apt_packages[*]} (not root, no sudo); the real-client tests will be skipped" >&2
  else
    echo "scripts/test.sh: installing Debian packages: ${apt_packages[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
  fi
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# A copy installed without -e (an older quick start) leaves files in site-packages that pip does not
# remove when it switches to the editable install (numba's cache among them), and a leftover
# site-packages/rumble folder would hide this source tree: remove that copy first.
for installed in .venv/lib/python3*/site-packages/rumble; do
  if [ -d "$installed" ]; then
    .venv/bin/python -m pip uninstall -q -y rumble >/dev/null 2>&1 || true
    rm -rf "$installed"
  fi
done
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi
failed=()
step() {  # step NAME COMMAND...: runs it, and notes its name if it failed
  local name=$1
  shift
  echo "scripts/test.sh: $name"
  "$@" || failed+=("$name")
}
step "ruff check" .venv/bin/ruff check rumble tests scripts
step "ruff format --check" .venv/bin/ruff format --check rumble tests scripts
step "mypy" .venv/bin/mypy
# Several processes (pytest-xdist), each taking whole modules, so that a module's fixtures are built
# once. The end-to-end tests spend most of their time waiting on servers and the real client: three
# processes on two cores took 6 min 55 s where two took 8 min 24 s (a 2-core machine, one core kept
# busy by stress-ng). The collection order: tests/e2e/conftest.py puts the longest modules first.
parallel=(--dist loadfile --no-loadscope-reorder)
# Each test runs once: the end-to-end tests on the machine's clock (they drive Java, Chromium and
# nginx, which faketime's preloaded library would reach too), every other test with the clock 400
# days ahead, so that one depending on today's date fails here, not on some later day.
step "the end-to-end tests" .venv/bin/python -m pytest -n 3 "${parallel[@]}" tests/e2e
if command -v faketime >/dev/null 2>&1; then
  step "the other tests, the clock 400 days ahead (faketime -f '+400d')" \
    faketime -f '+400d' .venv/bin/python -m pytest -p no:cacheprovider --ignore=tests/e2e -n 2 "${parallel[@]}"
else
  if [ "${CI:-}" = true ]; then
    echo "scripts/test.sh: faketime is missing; CI must run the tests with the clock shifted" >&2
    failed+=("the shifted clock (no faketime)")
  else
    echo "scripts/test.sh: faketime is missing: the other tests run on today's clock" >&2
  fi
  step "the other tests" .venv/bin/python -m pytest --ignore=tests/e2e -n 2 "${parallel[@]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'scripts/test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "scripts/test.sh: every step passed"
