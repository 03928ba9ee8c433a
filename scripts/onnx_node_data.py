#!/usr/bin/python3
"""Generates ONNX's backend node tests (model.onnx + test_data_set_*/{input,output}_*.pb per case)
into OUTDIR/node, as `backend-test-tools generate-data` does, reproducibly (numpy seeded) and with
Debian's python3-onnx 1.12 under numpy 1.24 (whose removed aliases np.float, np.object, ... the
1.12 generators still use). Writes OUTDIR/stamp with the number of cases last."""
import argparse
import os
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore", FutureWarning)
for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object), ("complex", complex),
                 ("str", str)):
    if not hasattr(np, alias):
        setattr(np, alias, t)

from onnx.backend.test import cmd_tools  # noqa: E402 (after the aliases)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("outdir")
    args = ap.parse_args()
    np.random.seed(0)
    cmd_tools.generate_data(argparse.Namespace(output=args.outdir, op_type=None))
    cases = [d for d in os.listdir(os.path.join(args.outdir, "node")) if not d.endswith("_expanded")]
    with open(os.path.join(args.outdir, "stamp"), "w") as f:
        f.write(f"{len(cases)}\n")
    print(f"onnx_node_data: {len(cases)} node tests (without the _expanded variants) in {args.outdir}/node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
