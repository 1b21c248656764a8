#!/usr/bin/env bash
# Proves the packages are complete, as an app sees them: packs src/ with pack.sh, then builds the apps in
# tests/ChannelPool.PackageTests against the packed packages only (dependencies, analyzers and XML docs included)
# and runs the ones that need no outside service. The apps compile the C# snippets marked in README.md as they stand.
# It also regenerates a dotnet-svcutil client in a real build: the [PooledClient] twin must follow with no edit.
# Prints one line per step; on failure, the failing step's output, and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

feed="artifacts/packages"
work="artifacts/package-smoke"
apps="tests/ChannelPool.PackageTests"
log="$work/log.txt"
packages=(ChannelPool ChannelPool.Hosting ChannelPool.OpenTelemetry ChannelPool.ServiceModel
          ChannelPool.PollingDuplex ChannelPool.PollingDuplex.Client ChannelPool.PollingDuplex.Protocol
          ChannelPool.PollingDuplex.Redis)
snippets=(quick-start drop-in hosting generated-client)

rm -rf "$work"
mkdir -p "$work/snippets"
fail() { echo "package smoke: $*" >&2; exit 1; }
# step COMMAND...: runs it quietly; on failure shows the end of its output.
step() { "$@" >"$log" 2>&1 || { tail -n 60 "$log" >&2; fail "failed: $*"; }; }

step ./pack.sh "$feed"
version=$(dotnet msbuild src/ChannelPool/ChannelPool.csproj -getProperty:Version)
for id in "${packages[@]}"; do
  for ext in nupkg snupkg; do
    [ -f "$feed/$id.$version.$ext" ] || fail "pack.sh wrote no $id.$version.$ext"
  done
done
packed=$(find "$feed" -maxdepth 1 -name '*.nupkg' | wc -l)
[ "$packed" -eq "${#packages[@]}" ] || fail "pack.sh wrote $packed packages, expected ${#packages[@]}: tests, samples and perf must not be packable"
echo "package smoke: packed ${#packages[@]} packages and their symbol packages at $version"

# A snippet is the ```csharp block after a line "<!-- snippet: NAME ... -->" in README.md.
for name in "${snippets[@]}"; do
  awk -v name="$name" '
    $0 ~ "^<!-- snippet: " name "[ >]" { found = 1; next }
    found == 1 && /^```csharp/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }
  ' README.md >"$work/snippets/$name.cs"
  [ -s "$work/snippets/$name.cs" ] || fail "README.md has no C# block marked <!-- snippet: $name -->"
done
echo "package smoke: extracted README snippets: ${snippets[*]}"

# The Regeneration app compiles whatever Reference.cs sits here: first the generated client, later the regenerated one.
regeneration="$work/regeneration/Reference.cs"
mkdir -p "$(dirname "$regeneration")"
# One dotnet-svcutil fixture serves the generator tests and these apps.
fixture="tests/ChannelPool.ServiceModel.Generators.Tests"
cp "$fixture/ServiceReference/Reference.cs" "$regeneration"

step dotnet build "$apps/ChannelPool.PackageTests.slnx" -c Release
echo "package smoke: built the apps against the packed packages, warnings as errors"

# What restore unpacked is what a user gets: the README, the XML docs and the metadata must be in it.
for id in "${packages[@]}"; do
  dir="$work/packages/${id,,}/$version"
  [ -d "$dir" ] || fail "no app restored $id $version"
  [ -f "$dir/README.md" ] || fail "$id has no README.md"
  [ -f "$dir/lib/net10.0/$id.xml" ] || fail "$id has no XML docs"
  for field in '<license type="expression">' '<readme>' '<description>' '<tags>'; do
    grep -q "$field" "$dir/${id,,}.nuspec" || fail "$id's nuspec lacks $field"
  done
done

# The source generator travels inside the ServiceModel package, where the compiler picks it up as an analyzer.
generator="$work/packages/channelpool.servicemodel/$version/analyzers/dotnet/cs/ChannelPool.ServiceModel.Generators.dll"
[ -f "$generator" ] || fail "ChannelPool.ServiceModel has no source generator at analyzers/dotnet/cs"

run() {
  local app=$1 expect=$2
  step timeout 60 dotnet "$work/bin/$app/Release/net10.0/$app.dll"
  grep -q "$expect" "$log" || { cat "$log" >&2; fail "$app did not print \"$expect\""; }
  echo "package smoke: ran $app: $(grep "$expect" "$log" | head -n 1)"
}
run QuickStart "quick start: sent 4 bytes"
run PollingDuplex "polling duplex: opened pooled session"
run Regeneration "the twin has Echo, EchoAfter, EchoAfterAsync, EchoAsync, Fail, FailAsync$"
run Regeneration "endpoint BasicHttpsBinding_IEchoService, ConfigureEndpoint ran 1 time(s), the call reached 127.0.0.1:9"

# The service gained WhoAmI: the tool rewrites Reference.cs, the app rebuilds, and the twin has the operation.
cp "$fixture/Regenerated/Reference.cs" "$regeneration"
step dotnet build "$apps/Regeneration/Regeneration.csproj" -c Release
run Regeneration "the twin has Echo, EchoAfter, EchoAfterAsync, EchoAsync, Fail, FailAsync, WhoAmI, WhoAmIAsync$"
