#!/bin/sh
# Runs Verilator with its output in a log file (printed only on failure): verilate.sh LOG verilator ARGS...
log="$1"; shift
"$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
