#!/usr/bin/env bash
# Runs every test: the .NET solution's (dotnet test ChannelPool.sln), then the browser client's in Chromium
# (clients/polling-duplex: Node's test runner driving Debian's chromium through playwright-core, against the real
# Kestrel server each test starts). Restores, builds and installs what they need: the build runs npm ci for the
# client; redis-server (the Redis store's tests), curl (the protocol document's walk-through) and chromium come from
# apt-get when they are missing (CHROMIUM_PATH points to another Chromium). A test whose program could not be
# installed is skipped and says why. Extra arguments go to `dotnet test`. With BROWSER_TEST_RESULTS=<file>, the
# browser tests also write their TAP report there (.ci/run sums it).
set -uo pipefail
cd "$(dirname "$0")"

.ci/apt-install redis-server redis-server || echo "The Redis store's tests will be skipped." >&2
.ci/apt-install curl curl || echo "CurlTests will be skipped." >&2

dotnet test ChannelPool.sln -c Release "$@"
dotnet_status=$?

.ci/apt-install "${CHROMIUM_PATH:-/usr/bin/chromium}" chromium || echo "The browser tests will be skipped." >&2
# The tests run in the client's folder: a relative report path is relative to here.
case "${BROWSER_TEST_RESULTS:-}" in ''|/*) ;; *) BROWSER_TEST_RESULTS="$PWD/$BROWSER_TEST_RESULTS" ;; esac
(
  set -e
  cd clients/polling-duplex
  # npm ci only when the lockfile changed since the last one (the .NET build usually did it already).
  [ -f node_modules/.package-lock.json ] && [ ! package-lock.json -nt node_modules/.package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error
  # The servers the browser tests start are apps no test project references, so dotnet test did not build them.
  npm run --silent build:servers
  npm run --silent build:tests
  reporters=(--test-reporter=spec --test-reporter-destination=stdout)
  if [ -n "${BROWSER_TEST_RESULTS:-}" ]; then
    mkdir -p "$(dirname "$BROWSER_TEST_RESULTS")"
    reporters+=(--test-reporter=tap "--test-reporter-destination=$BROWSER_TEST_RESULTS")
  fi
  # One test file at a time: each starts its own server and browser, and some measure waits.
  node --test --test-concurrency=1 "${reporters[@]}" build/test/*.test.js
)
browser_status=$?

[ "$dotnet_status" -eq 0 ] && [ "$browser_status" -eq 0 ]
