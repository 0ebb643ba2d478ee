#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The docs check must fail on a file with one offence per line (and name each
# of those lines) and pass a file of look-alikes that are legitimate.
#   check_docs_selftest.sh CHECK_DOCS_SH SAMPLE_DIR
set -uo pipefail
check=$1 dir=$2
status=0

out=$("$check" --files "$dir/bad-sample.md")
rc=$?
if [ $rc -ne 1 ]; then echo "bad sample: exit $rc, expected 1"; status=1; fi
# Every line from the third on is an offence; each must be reported.
total=$(wc -l < "$dir/bad-sample.md")
for n in $(seq 3 "$total"); do
  if ! grep -q "^$dir/bad-sample.md:$n: " <<<"$out"; then
    echo "bad sample: line $n not reported: $(sed -n "${n}p" "$dir/bad-sample.md")"
    status=1
  fi
done
for n in 1 2; do
  if grep -q "^$dir/bad-sample.md:$n: " <<<"$out"; then echo "bad sample: line $n reported"; status=1; fi
done

out=$("$check" --files "$dir/good-sample.md")
rc=$?
if [ $rc -ne 0 ]; then echo "good sample: exit $rc, expected 0:"; echo "$out"; status=1; fi

"$check" --files "$dir/no-such-file.md" >/dev/null 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "a missing file passed"; status=1; fi

[ $status -eq 0 ] && echo "check_docs.sh: $((total - 2)) offences reported, look-alikes passed"
exit $status
