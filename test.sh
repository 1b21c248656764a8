#!/usr/bin/env bash
# Runs every test in the solution. Restores and builds whatever it needs; extra arguments go to `dotnet test`.
set -euo pipefail
cd "$(dirname "$0")"
exec dotnet test ChannelPool.sln -c Release "$@"
