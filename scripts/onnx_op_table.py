#!/usr/bin/python3
"""The per-operator table of ONNX's node tests for docs/models.md.

usage: build/bin/onnx_node_tests --data build/tests/onnx/node_data/node \
           --expectations tests/onnx/node_expectations.txt --table /tmp/cases.tsv
       /usr/bin/python3 scripts/onnx_op_table.py /tmp/cases.tsv > /tmp/table.md

Each case counts for the operator it tests: the one operator of its model, or for models of
several operators the case name's operator (test_<op>_...) when it is one of them, else the
first. A row gives the operator, its cases passing of all, and why the others do not (the first
message, shortened)."""
import collections
import re
import sys


def operator_of(name, ops):
    if len(ops) == 1:
        return ops[0]
    key = name[len("test_"):].replace("_", "").lower()
    for op in sorted(ops, key=len, reverse=True):
        if key.startswith(op.lower()):
            return op
    return ops[0]


def main(path):
    rows = collections.OrderedDict()
    for line in open(path):
        name, outcome, ops, message = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
        op = operator_of(name, ops.split("+"))
        r = rows.setdefault(op, {"pass": 0, "all": 0, "why": ""})
        r["all"] += 1
        if outcome == "pass":
            r["pass"] += 1
        elif not r["why"]:
            why = re.sub(r"^node '[^']*' \([A-Za-z]+\): ", "", message)
            r["why"] = why.replace("|", "/")[:90]
    total = sum(r["all"] for r in rows.values())
    passed = sum(r["pass"] for r in rows.values())
    print(f"{passed} of {total} cases pass ({100.0 * passed / total:.1f}%).\n")
    print("| operator | pass | why the others do not |")
    print("|---|---|---|")
    for op in sorted(rows, key=str.lower):
        r = rows[op]
        print(f"| {op} | {r['pass']}/{r['all']} | {r['why']} |")


if __name__ == "__main__":
    main(sys.argv[1])
