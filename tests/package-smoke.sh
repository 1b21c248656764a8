#!/usr/bin/env bash
# Proves the packages are complete, as an app sees them: packs src/ with pack.sh, then builds the apps in
# tests/ChannelPool.PackageTests against the packed packages only (dependencies, analyzers and XML docs included)
# and runs the ones that need no outside service. The apps compile the C# snippets marked in README.md and the push
# documents as they stand; each snippet that is a whole program is run, and a server snippet must start and answer.
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
snippets=(quick-start drop-in hosting generated-client
          push-hosting push-identity push-publisher push-rate-limit push-cors push-browser-client push-client push-pooled
          push-redis push-redis-handler push-redis-package)
# The documents a user copies C# from: every C# block in them is marked, and so compiled.
documents=(README.md docs/polling-duplex.md clients/polling-duplex/README.md src/ChannelPool.PollingDuplex.Redis/README.md)

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

# A snippet is the ```csharp block right after a line "<!-- snippet: NAME ... -->" in one of the documents (indented
# too, inside a list item); each name is marked once.
unmarked=$(awk '
  /^[ ]*```csharp/ && previous !~ /^[ ]*<!-- snippet: / { print FILENAME ":" FNR }
  { previous = $0 }
' "${documents[@]}")
[ -z "$unmarked" ] || fail "C# blocks with no <!-- snippet: NAME --> line above, so never compiled: $unmarked"
for name in "${snippets[@]}"; do
  awk -v name="$name" '
    $0 ~ "^[ ]*<!-- snippet: " name "[ >]" { found = 1; marks++; next }
    found == 1 && /^[ ]*```csharp/ { found = 2; next }
    found == 2 && /^[ ]*```/ { found = 0; next }
    found == 2 { print }
    END { exit marks == 1 ? 0 : 1 }
  ' "${documents[@]}" >"$work/snippets/$name.cs" || fail "<!-- snippet: $name --> must mark exactly one C# block in ${documents[*]}"
  [ -s "$work/snippets/$name.cs" ] || fail "no C# block follows <!-- snippet: $name -->"
done
echo "package smoke: extracted ${#snippets[@]} snippets: ${snippets[*]}"

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

# The push documents' server programs, as a user runs them: each must start (an exception at start fails here) and
# answer on loopback the way its section says.
server=""
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true' EXIT
# serve APP: starts the app on a free loopback port and waits until it listens; $base is its address.
serve() {
  local app=$1 i
  dotnet "$work/bin/$app/Release/net10.0/$app.dll" --urls http://127.0.0.1:0 >"$work/$app.log" 2>&1 &
  server=$!
  for i in $(seq 1 600); do
    base=$(sed -n 's|.*Now listening on: \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$work/$app.log" | head -n 1)
    [ -z "$base" ] || return 0
    kill -0 "$server" 2>/dev/null || { tail -n 60 "$work/$app.log" >&2; server=""; fail "$app exited at start"; }
    sleep 0.1
  done
  tail -n 60 "$work/$app.log" >&2
  fail "$app did not listen within 60 s"
}
# answers STATUS WHAT CURL-ARGS...: the request must get STATUS.
answers() {
  local expect=$1 what=$2 got
  shift 2
  got=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 30 "$@") || true
  [ "$got" = "$expect" ] || { tail -n 60 "$work/$app.log" >&2; cat "$work/body" >&2 || true; fail "$app: $what got $got, expected $expect"; }
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; echo "package smoke: ran $app: $*"; }
open=(-X POST -H 'Content-Type: application/json' -d '{}')

app=PushHosting; serve $app
answers 201 "an open of /chat" "${open[@]}" "$base/chat/sessions"
answers 201 "an open of /pubsub" "${open[@]}" "$base/pubsub/sessions"
stop "opened sessions on /chat and /pubsub"

app=PushIdentity; serve $app
answers 401 "an open with no token" "${open[@]}" "$base/pubsub/sessions"
stop "an open with no token got 401"

app=PushRateLimit; serve $app
answers 201 "an open" "${open[@]}" "$base/pubsub/sessions"
stop "opened a session through the rate limiter"

app=PushCors; serve $app
answers 204 "a preflight from https://app.example" -X OPTIONS -H 'Origin: https://app.example' \
  -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type' "$base/pubsub/sessions"
answers 201 "an open from https://app.example" "${open[@]}" -H 'Origin: https://app.example' "$base/pubsub/sessions"
stop "answered the preflight and the open"

app=PushBrowserClient; serve $app
answers 200 "GET index.js" "$base/_channelpool/polling-duplex/index.js"
answers 200 "GET index.d.ts" "$base/_channelpool/polling-duplex/index.d.ts"
answers 201 "an open" "${open[@]}" "$base/pubsub/sessions"
stop "served index.js and index.d.ts, and opened a session"

run PushPublisher "publisher: received"
