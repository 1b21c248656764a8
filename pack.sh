#!/usr/bin/env bash
# Packs every shipped library under src/ into artifacts/packages (or the folder given as the first argument):
# a .nupkg and a .snupkg (symbols with embedded sources) per package, all at the version in Directory.Build.props.
# Extra arguments go to `dotnet pack`.
set -euo pipefail
cd "$(dirname "$0")"
output="${1:-artifacts/packages}"
[ $# -gt 0 ] && shift
mkdir -p "$output"
rm -f "$output"/*.nupkg "$output"/*.snupkg
# ContinuousIntegrationBuild maps source paths to /_/ so the packed PDBs do not carry this machine's folders.
dotnet pack ChannelPool.sln -c Release -o "$output" -p:ContinuousIntegrationBuild=true "$@"
ls -1 "$output"
