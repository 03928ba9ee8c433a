#!/usr/bin/env bash
# C++ formatting: every tracked .cc / .h file against .clang-format (Google base, 120 columns).
#
#   scripts/format.sh           # reformats the files in place
#   scripts/format.sh --check   # lists the files clang-format would change, exits 1 if any (CTest
#                               # test `format_check`, label format)
#
# The output of clang-format differs between its versions, so the check uses the version the
# tree was formatted with (clang-format-14, Debian 12's clang-format package; scripts/bootstrap.sh
# installs it); without it the check exits 77, which CTest counts as skipped.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "format.sh: unknown option $1 (--check)" >&2; exit 2 ;;
esac
cf=$(command -v clang-format-14 || true)
if [ -z "$cf" ]; then
  echo "format.sh: clang-format-14 not found (apt-get install clang-format)" >&2
  exit 77
fi
cd "$here"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cc' -o -name '*.h' \) -print | sed 's|^\./||' | sort)
fi
if ((check == 0)); then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$cf" -i --style=file
  exit 0
fi
# One clang-format per batch of files (a process per file took most of the check's time); each
# misformatted file is reported as "FILE:LINE:COL: error: code should be clang-formatted".
report=$(printf '%s\0' "${files[@]}" | xargs -0 -n 100 "$cf" --style=file --dry-run -Werror 2>&1 || true)
mapfile -t bad_files < <(printf '%s\n' "$report" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
other=$(printf '%s\n' "$report" | grep -v -e 'code should be clang-formatted' -e '^ ' -e '^$' | grep -v -e '^[[:space:]]*\^' || true)
for f in "${bad_files[@]}"; do
  echo "format.sh: $f is not formatted (scripts/format.sh fixes it)"
done
if [ -n "$other" ] && [ ${#bad_files[@]} -eq 0 ]; then
  echo "format.sh: clang-format failed: $other" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files checked, ${#bad_files[@]} not formatted"
((${#bad_files[@]} == 0))
