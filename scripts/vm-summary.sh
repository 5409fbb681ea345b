#!/bin/bash
# Prints the VM tests' summary table (target/vm/summary.tsv, or FILE) aligned, with totals.
#
# Usage: vm-summary.sh [FILE]
# Then, when failures.txt lies beside FILE, why each failed test failed (its panic message, cut;
# the harness's ledger writes it): a CI log shows its tail, so the reasons must be in it.
# The Rust harness appends one row per VM test when the test's thread ends (tests/vm/harness/,
# `ledger`; docs/vm-harness.md, "The summary table"): test, boots, crashes, hangs, remeasured,
# verdict, wall_s. `make test-vm` removes the file first and runs this at the end whatever the
# tests' outcome, so the table covers that run only. Always exits 0: the tests' own exit status
# says whether they passed.
set -uo pipefail
FILE=${1:-"$(cd "$(dirname "$0")/.." && pwd)/target/vm/summary.tsv"}
if [ ! -f "$FILE" ] || [ "$(wc -l < "$FILE")" -lt 2 ]; then
  echo "vm-summary: no rows in $FILE (no VM test booted a guest)"
  exit 0
fi
echo "=== VM test summary ($FILE)"
# The rows as they are, a rule under the header and above the totals; the totals sum the
# numeric columns and count the verdicts that are not a plain pass.
awk -F'\t' -v OFS='\t' '
  function rule() { print "----", "-----", "-------", "-----", "----------", "-------", "------" }
  NR == 1 { print; rule(); next }
  {
    print
    n++; boots += $2; crashes += $3; hangs += $4; remeasured += $5; wall += $7
    if ($6 == "FAIL") failed++
    else if ($6 == "pass-timing-not-judged") not_judged++
  }
  END {
    rule()
    verdicts = (failed + 0) " FAIL"
    if (not_judged) verdicts = verdicts ", " not_judged " timing not judged"
    print "total (" n (n == 1 ? " test)" : " tests)"), boots, crashes, hangs, remeasured, verdicts, sprintf("%.1f", wall)
  }' "$FILE" | column -t -s $'\t'
awk -F'\t' 'NR > 1 { wall += $7; if ($7 + 0 >= top) { top = $7 + 0; slowest = $1 } }
  END { printf "wall time %dm %02ds in all; the slowest test: %s (%.1f s)\n", wall / 60, wall % 60, slowest, top }' "$FILE"
FAILURES="$(dirname "$FILE")/failures.txt"
if [ -s "$FAILURES" ]; then
  echo "=== why the failed tests failed ($FAILURES; each test's log has the rest)"
  cat "$FAILURES"
fi
