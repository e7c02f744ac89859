#!/usr/bin/env bash
# Downloads the full Multi30k task 1 English-German corpus: raw, untokenized text, one
# sentence a line, lines aligned across languages.
#
#   train.en / train.de                         29,000 sentences
#   val.en / val.de                              1,014 sentences
#   test_2016_flickr.en / test_2016_flickr.de    1,000 sentences
#
# Source: https://github.com/multi30k/dataset (data/task1/raw), gunzipped, unchanged.
# Cite: Elliott, Frank, Sima'an and Specia, "Multi30K: Multilingual English-German Image
# Descriptions", Proceedings of the 5th Workshop on Vision and Language, 2016.
#
# Usage:
#   scripts/download_multi30k.sh [DIRECTORY]      (default: data/multi30k)
#
# Each file is downloaded with curl (or wget), gunzipped into a temporary directory,
# checked against the SHA-256 of the copy kerasnmt's benchmarks were measured on, and only
# then moved to DIRECTORY: an interrupted run never leaves a partial file under a final
# name, and a file already present with the right checksum is not downloaded again.
#
# Environment:
#   MULTI30K_REVISION   branch, tag or commit of multi30k/dataset (default: master)
#   MULTI30K_BASE_URL   where the .gz files are (default: the GitHub raw URL of
#                       data/task1/raw at MULTI30K_REVISION; file:// URLs work with curl)
#   MULTI30K_VERIFY     set to 0 to keep files whose checksum differs (default: 1)

set -euo pipefail

revision="${MULTI30K_REVISION:-master}"
base_url="${MULTI30K_BASE_URL:-https://raw.githubusercontent.com/multi30k/dataset/${revision}/data/task1/raw}"
verify="${MULTI30K_VERIFY:-1}"
destination="${1:-data/multi30k}"

# name, SHA-256 of the gunzipped file
files="
train.en 460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6
train.de 2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72
val.en 1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227
val.de 660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660
test_2016_flickr.en 399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182
test_2016_flickr.de 4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16
"

fail() {
  echo "download_multi30k.sh: $*" >&2
  exit 1
}

fetch() {  # fetch URL OUTPUT
  if command -v curl >/dev/null 2>&1; then
    curl --fail --silent --show-error --location --retry 3 --output "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget --quiet --tries=3 --output-document="$2" "$1"
  else
    fail "needs curl or wget to download $1"
  fi
}

sha256() {  # sha256 FILE
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  else
    shasum -a 256 "$1" | cut -d ' ' -f 1
  fi
}

command -v gunzip >/dev/null 2>&1 || fail "needs gunzip"
mkdir -p "$destination"
workdir="$(mktemp -d "${destination}/.download.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

while read -r name checksum; do
  [ -n "$name" ] || continue
  target="${destination}/${name}"
  if [ -f "$target" ] && [ "$(sha256 "$target")" = "$checksum" ]; then
    echo "${target}: already there"
    continue
  fi
  echo "${target}: downloading ${base_url}/${name}.gz"
  fetch "${base_url}/${name}.gz" "${workdir}/${name}.gz" || fail "could not download ${base_url}/${name}.gz"
  gunzip --stdout "${workdir}/${name}.gz" > "${workdir}/${name}" || fail "${name}.gz is not a valid gzip file"
  actual="$(sha256 "${workdir}/${name}")"
  if [ "$actual" != "$checksum" ]; then
    if [ "$verify" = "0" ]; then
      echo "${target}: SHA-256 ${actual} differs from the expected ${checksum}; kept (MULTI30K_VERIFY=0)" >&2
    else
      fail "${name}: SHA-256 ${actual}, expected ${checksum}. The upstream file changed, or" \
        "MULTI30K_REVISION/MULTI30K_BASE_URL point elsewhere; rerun with MULTI30K_VERIFY=0 to keep it."
    fi
  fi
  mv "${workdir}/${name}" "$target"
done <<< "$files"

echo "Multi30k task 1 (en-de) in ${destination}:"
(cd "$destination" && wc -l train.en train.de val.en val.de test_2016_flickr.en test_2016_flickr.de)
