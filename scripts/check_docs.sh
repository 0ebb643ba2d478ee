#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks that the user documentation (README.md and every *.md under docs/)
# reads as reference, not as a work log: exit 1 and one "file:line: rule: text"
# line per finding, exit 0 when clean, exit 2 on a usage error.
#
#   scripts/check_docs.sh                 # README.md and docs/**/*.md
#   scripts/check_docs.sh --files F...   # only these files (the self-test)
#
# Rules (grep -P; case-insensitive where marked):
#   session      the word "session" or "sessions" (case-insensitive, whole
#                word; "PerftestSession" is one word and passes)
#   stop         "stop N" (case-insensitive): a reference to a work stop
#   issue        "issue N" or "issue N/M" (case-insensitive), and tags such as
#                "[3/5]" or "3/5)": N/5 or N/7 closed by a bracket
#   commit hash  a lowercase hex token of 7-40 characters with at least one
#                digit and one letter, standing alone (not part of a longer
#                word, not after "0x"). Hex constants are written 0x... or in
#                upper case and MAC addresses have 2-digit groups, so neither
#                matches. The one line scripts/bench-report writes to say what
#                was measured (it starts with "Measured by `scripts/bench-report`",
#                or scripts/perf-report's) may name the commit.
#   path         absolute paths of a build machine: /work/, /tmp/uroce,
#                /home/, /root/
#   outside      references to files outside the repository: ../shared, shared/
set -uo pipefail

files=()
if [ "${1:-}" = "--files" ]; then
  shift
  [ $# -gt 0 ] || { echo "usage: $0 [--files FILE...]" >&2; exit 2; }
  files=("$@")
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--files FILE...]" >&2
  exit 2
else
  cd "$(dirname "$0")/.." || exit 2
  files=(README.md)
  while IFS= read -r -d '' f; do files+=("$f"); done < <(find docs -name '*.md' -print0 | sort -z)
fi

rules=(
  'session|i|\bsessions?\b'
  'stop|i|\bstop [0-9]+'
  'issue|i|\bissue [0-9]+(/[0-9]+)?'
  'issue||\b[0-9]+/[57][])]'
  'commit hash||(?<![0-9A-Za-z_])(?<!0x)(?=[0-9a-f]{0,39}[0-9])(?=[0-9a-f]{0,39}[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z_])'
  'path||/work/|/tmp/uroce|/home/|/root/'
  'outside||\.\./shared|(?<![A-Za-z0-9_./-])shared/'
)
provenance='^Measured by `scripts/(bench|perf)-report`'

found=0
for f in "${files[@]}"; do
  if [ ! -r "$f" ]; then
    echo "$f: cannot read" >&2
    found=1
    continue
  fi
  for rule in "${rules[@]}"; do
    name=${rule%%|*}
    rest=${rule#*|}
    flags=${rest%%|*}
    re=${rest#*|}
    opts=(-nP)
    [ "$flags" = i ] && opts+=(-i)
    while IFS= read -r hit; do
      line=${hit#*:}
      if [ "$name" = "commit hash" ] && grep -qP "$provenance" <<<"$line"; then continue; fi
      echo "$f:${hit%%:*}: $name: $line"
      found=1
    done < <(grep "${opts[@]}" -e "$re" -- "$f")
  done
done
exit $found
