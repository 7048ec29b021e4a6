#!/usr/bin/env bash
# Install ONNX Runtime for Node (CPU) into ${EMBER_ORT_DIR:-$HOME/.cache/ember/ort}, pinned by the
# package-lock.json next to this script, and print the install folder. Idempotent: when the folder
# already holds an install made from the same lock file, nothing is fetched.
#
# The package's postinstall step downloads optional GPU libraries from a separate host;
# ONNXRUNTIME_NODE_INSTALL=skip turns that off (the CPU library ships inside the npm package).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${EMBER_ORT_DIR:-$HOME/.cache/ember/ort}

command -v npm >/dev/null || { echo "install_ort.sh: npm not found (apt-get install npm)" >&2; exit 1; }
stamp="$dest/.ember-installed"
if [ -f "$dest/node_modules/onnxruntime-node/package.json" ] && [ -f "$stamp" ] &&
   cmp -s "$here/package-lock.json" "$stamp"; then
  echo "$dest"
  exit 0
fi

mkdir -p "$dest"
rm -f "$stamp"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
if ! (cd "$dest" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error \
        >"$dest/npm-ci.log" 2>&1); then
  echo "install_ort.sh: npm ci failed in $dest; last lines of $dest/npm-ci.log:" >&2
  tail -n 20 "$dest/npm-ci.log" >&2
  exit 1
fi
# The stamp (a copy of the lock it was made from) is written last, so a half install never
# looks complete.
cp "$here/package-lock.json" "$stamp"
echo "$dest"
