#!/bin/sh
# CLI checks of `loom accel-example / disasm / sim` that need more than one command.
#   accel_cli.sh LOOM WORKDIR CASE
set -eu
loom=$1
dir=$2
mkdir -p "$dir"
prg="$dir/$3.loomprg"
case $3 in
  disasm_lines)  # one line per instruction, numbered, the last one FINISH
    n=$("$loom" accel-example --out "$prg" | sed -n 's/.*, \([0-9]*\) instructions.*/\1/p')
    lines=$("$loom" disasm "$prg" | wc -l)
    [ "$lines" -eq "$n" ] || { echo "disasm printed $lines lines for $n instructions"; exit 1; }
    "$loom" disasm "$prg" | tail -n 1 | grep -q "^$((n - 1)): FINISH" || { echo "last line is not FINISH"; exit 1; }
    echo "disasm: $n lines"
    ;;
  wrong_expected)  # the expected output is the file's last bytes: flip the last one, sim must fail
    "$loom" accel-example --out "$prg" > /dev/null
    size=$(wc -c < "$prg")
    last=$(tail -c 1 "$prg" | od -An -tu1 | tr -d ' ')
    printf "\\$(printf %o $(( (last + 1) % 256 )))" | dd of="$prg" bs=1 seek=$((size - 1)) conv=notrunc 2> /dev/null
    if "$loom" sim "$prg"; then echo "sim accepted a wrong expected output"; exit 1; fi
    ;;
  truncated)
    "$loom" accel-example --out "$prg" > /dev/null
    head -c 200 "$prg" > "$prg.cut"
    "$loom" sim "$prg.cut"
    ;;
  *) echo "unknown case $3"; exit 2 ;;
esac
