#!/usr/bin/python3
"""Which attribute values and optional inputs of the ONNX operators Loom imports the tests reach.

usage: build/bin/onnx_node_tests --list-ops > /tmp/onnx_ops.txt
       /usr/bin/python3 scripts/onnx_attr_coverage.py --ops /tmp/onnx_ops.txt \\
           --models build/models build/tests/onnx/node_data/node \\
           [--expectations tests/onnx/node_expectations.txt] [--gaps tests/onnx/attribute_gaps.txt] \\
           [--markdown FILE] [--check-doc docs/testing.md | --update-doc docs/testing.md]

Rows. Each supported operator's attributes come from onnx.defs, the schema of the newest opset up
to 18 (plus OPSET18 below: onnx 1.12 has no opset-18 schemas), and a few older forms Loom still
reads (OLDER_FORMS). An attribute with a fixed set of values the spec defines (VALUE_SETS) has one
value per member; any other attribute (numbers, lists, tensors, graphs, open strings) has the
values `given` and `default` (required ones only `given`). An optional input has the values
`present` and `absent`.

Models. Every *.onnx under the --models folders, recursively, that the tests run: an ONNX node
test (DIR/model.onnx) unless the expectations list DIR's name (it does not pass) or DIR is an
`_expanded` variant (onnx_node_tests skips those); any other NAME.onnx when its folder's
manifest.json lists case NAME. Every node of a supported operator in the default domain (not
inside If branches) reaches, per row, the value it gives (a value outside VALUE_SETS is added to
its row); an absent attribute reaches its default (an enumerable one: the spec's default value),
where the node's own opset has the attribute; an input counts where the node's own opset has it.
Models listed in a manifest count whether or not their test passes (their CTest test says that).

Gaps. --gaps lists, one a line, each value no model reaches and why: `Op attribute=value: why` or
`Op input:name=absent: why` (a line starting with '#' is a comment). A value reached by no model and not listed, a
line without a reason, and a line for a value that is reached (stale) or names no value are errors.

Output: a Markdown table (--markdown FILE, else stdout) with a one-line summary on top.
--check-doc DOC compares it with the text between the lines `<!-- attribute coverage: begin -->`
and `<!-- attribute coverage: end -->` of DOC; --update-doc DOC rewrites that text. Exit status 1
on any error above or a doc that differs, else 0.
"""
import argparse
import collections
import difflib
import functools
import json
import os
import re
import sys
import warnings

warnings.simplefilter("ignore")  # onnx 1.12 under a newer numpy warns on import
import onnx  # noqa: E402
import onnx.defs  # noqa: E402

NEWEST_OPSET = 18
DEFAULT_DOMAINS = ("", "ai.onnx")
BEGIN = "<!-- attribute coverage: begin -->"
END = "<!-- attribute coverage: end -->"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FLAG = ("0", "1")
REDUCE_OPS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
              "ReduceProd", "ReduceSum", "ReduceSumSquare")
WINDOW_OPS = ("BlackmanWindow", "HammingWindow", "HannWindow")
CONV_POOL_OPS = ("AveragePool", "Conv", "ConvInteger", "ConvTranspose", "LpPool", "MaxPool", "QLinearConv")

# The attributes whose values form a small fixed set, as the ONNX operator spec (docs/Operators.md,
# the attribute's description in the schema) defines it: (operators, attribute, values, default
# where the schema gives none, where the values come from). Values of other opsets than the
# newest <= 18 are included where Loom reads them; activations lists only the functions Loom's
# importer claims (import_rnn.cc: Sigmoid, Tanh, Relu), not the spec's others (Affine, LeakyRelu,
# ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus).
VALUE_SETS = [
    (("Resize",), "mode", ("nearest", "linear", "cubic"), None, "Resize-13/18 mode"),
    (("Resize",), "coordinate_transformation_mode",
     ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
      "tf_half_pixel_for_nn", "half_pixel_symmetric"), None,
     "Resize-13; tf_half_pixel_for_nn only in Resize-11, half_pixel_symmetric from Resize-18"),
    (("Resize",), "nearest_mode", ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"), None,
     "Resize-11/13/18 nearest_mode"),
    (("Resize",), "exclude_outside", FLAG, None, "Resize-11/13/18 exclude_outside"),
    (("Resize",), "antialias", FLAG, None, "Resize-18 antialias"),
    (("Resize",), "keep_aspect_ratio_policy", ("stretch", "not_larger", "not_smaller"), None,
     "Resize-18 keep_aspect_ratio_policy"),
    (("Upsample",), "mode", ("nearest", "linear"), None, "Upsample-9/10 mode"),
    (("GRU", "LSTM", "RNN"), "direction", ("forward", "reverse", "bidirectional"), None, "GRU/LSTM/RNN-14 direction"),
    (("GRU", "LSTM", "RNN"), "layout", FLAG, None, "GRU/LSTM/RNN-14 layout"),
    (("GRU",), "linear_before_reset", FLAG, None, "GRU-14 linear_before_reset"),
    (("LSTM",), "input_forget", FLAG, None, "LSTM-14 input_forget"),
    (("RNN",), "activations", ("Sigmoid", "Tanh", "Relu"), ("Tanh",), "RNN-14 activations (default Tanh)"),
    (("GRU",), "activations", ("Sigmoid", "Tanh", "Relu"), ("Sigmoid", "Tanh"),
     "GRU-14 activations (default Sigmoid, Tanh)"),
    (("LSTM",), "activations", ("Sigmoid", "Tanh", "Relu"), ("Sigmoid", "Tanh"),
     "LSTM-14 activations (default Sigmoid, Tanh, Tanh)"),
    (("Pad",), "mode", ("constant", "reflect", "edge"), None, "Pad-13/18 mode (wrap is Pad-19)"),
    (CONV_POOL_OPS, "auto_pad", ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"), None, "auto_pad of Conv and pools"),
    (("AveragePool", "MaxPool"), "ceil_mode", FLAG, None, "AveragePool-11, MaxPool-12 ceil_mode"),
    (("AveragePool",), "count_include_pad", FLAG, None, "AveragePool-11 count_include_pad"),
    (("MaxPool",), "storage_order", FLAG, None, "MaxPool-12 storage_order (0 row major, 1 column major)"),
    (("Gemm",), "transA", FLAG, None, "Gemm-13 transA"),
    (("Gemm",), "transB", FLAG, None, "Gemm-13 transB"),
    (("DepthToSpace",), "mode", ("DCR", "CRD"), None, "DepthToSpace-13 mode"),
    (REDUCE_OPS, "keepdims", FLAG, None, "Reduce*-13/18 keepdims"),
    (REDUCE_OPS, "noop_with_empty_axes", FLAG, None, "ReduceSum-13, the other Reduce*-18 noop_with_empty_axes"),
    (("ArgMax", "ArgMin"), "keepdims", FLAG, None, "ArgMax/ArgMin-13 keepdims"),
    (("ArgMax", "ArgMin"), "select_last_index", FLAG, None, "ArgMax/ArgMin-13 select_last_index"),
    (("TopK",), "largest", FLAG, None, "TopK-11 largest"),
    (("TopK",), "sorted", FLAG, None, "TopK-11 sorted"),
    (("CumSum",), "exclusive", FLAG, None, "CumSum-14 exclusive"),
    (("CumSum",), "reverse", FLAG, None, "CumSum-14 reverse"),
    (("Trilu",), "upper", FLAG, None, "Trilu-14 upper"),
    (("Mod",), "fmod", FLAG, None, "Mod-13 fmod"),
    (("ScatterElements", "ScatterND"), "reduction", ("none", "add", "mul", "max", "min"), None,
     "ScatterElements/ScatterND-16 reduction; max and min from opset 18"),
    (("BatchNormalization",), "training_mode", FLAG, None, "BatchNormalization-15 training_mode"),
    (("IsInf",), "detect_negative", FLAG, None, "IsInf-10 detect_negative"),
    (("IsInf",), "detect_positive", FLAG, None, "IsInf-10 detect_positive"),
    (("BitShift",), "direction", ("LEFT", "RIGHT"), None, "BitShift-11 direction (required)"),
    (("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"), "reduction", ("none", "sum", "mean"), None,
     "NegativeLogLikelihoodLoss/SoftmaxCrossEntropyLoss-13 reduction"),
    (("Reshape",), "allowzero", FLAG, None, "Reshape-14 allowzero"),
    (WINDOW_OPS, "periodic", FLAG, None, "Hann/Hamming/BlackmanWindow-17 periodic"),
    (("ReverseSequence",), "time_axis", FLAG, None, "ReverseSequence-10 time_axis: 'one of 0 (default), or 1'"),
    (("ReverseSequence",), "batch_axis", FLAG, None, "ReverseSequence-10 batch_axis: 'one of 1 (default), or 0'"),
]

# What opset 18 adds to the operators' attributes and inputs (onnx 1.12's schemas stop at 17):
# (operators, kind, name, default value of an enumerable attribute or None). Skipped where the
# installed onnx's schema has it already.
OPSET18 = [
    (("Resize",), "attribute", "antialias", "0"),
    (("Resize",), "attribute", "axes", None),
    (("Resize",), "attribute", "keep_aspect_ratio_policy", "stretch"),
    (tuple(op for op in REDUCE_OPS if op != "ReduceSum"), "attribute", "noop_with_empty_axes", "0"),
    (tuple(op for op in REDUCE_OPS if op != "ReduceSum"), "input", "axes", None),
    (("Pad",), "input", "axes", None),
    (("Split",), "attribute", "num_outputs", None),
]
# The input names of opset 18 where they differ from onnx 1.12's newest schema.
OPSET18_INPUTS = {op: ("data", "axes") for op in REDUCE_OPS}
OPSET18_INPUTS["Pad"] = ("data", "pads", "constant_value", "axes")

# Attributes of older opsets that later became inputs (or went away), which Loom still reads: one
# value, `given` (the newest form's row covers the rest). (operator, attribute, opsets).
OLDER_FORMS = [
    ("Dropout", "ratio", "7-11"),
    ("ReduceSum", "axes", "11-12"),
    ("Split", "split", "11-12"),
    ("Squeeze", "axes", "11-12"),
    ("Unsqueeze", "axes", "11-12"),
]

# Operators whose attributes are alternatives, one of which a node gives: each has only `given`.
ONE_OF = {"Constant"}  # Constant-13: exactly one of value, value_float(s), value_int(s), value_string(s), sparse_value

Row = collections.namedtuple("Row", "op kind name values defaults note")


def key_of(op, kind, name, value):
    """The row-and-value key as the gaps file writes it."""
    return f"{op} {'input:' if kind == 'input' else ''}{name}={value}"


# ---- step 1: the supported operators ----

def read_ops(path):
    """The operator types of --ops (one a line), each checked against onnx.defs."""
    ops = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            ops.append(line)
    missing = [op for op in ops if not onnx.defs.has(op)]
    if missing:
        raise SystemExit(f"onnx_attr_coverage: {path}: no ONNX schema for {', '.join(missing)} "
                         f"(onnx {onnx.__version__})")
    return sorted(set(ops))


# ---- step 2: the rows (attributes and optional inputs, with their values) ----

def schema_at(op, opset):
    """The operator's schema at `opset` (the newest up to 18; its first one for older opsets)."""
    try:
        return onnx.defs.get_schema(op, min(opset, NEWEST_OPSET))
    except onnx.defs.SchemaError:
        return onnx.defs.get_schema(op, NEWEST_OPSET)


def names_at(op, opset):
    """The attribute and input names the operator has at `opset` (with OPSET18's from 18 on)."""
    schema = schema_at(op, opset)
    attrs = set(schema.attributes)
    inputs = [i.name for i in schema.inputs]
    if opset >= 18:
        attrs |= {name for ops, kind, name, _ in OPSET18 if op in ops and kind == "attribute"}
        inputs = list(OPSET18_INPUTS.get(op, inputs))
    return attrs, inputs


def attr_default(attr):
    """The schema's default of an attribute as value labels, or None."""
    if not attr.default_value.name:
        return None
    v = onnx.helper.get_attribute_value(attr.default_value)
    if isinstance(v, bytes):
        return (v.decode(),)
    if isinstance(v, list):
        return tuple(sorted({x.decode() if isinstance(x, bytes) else str(x) for x in v}))
    return (str(v),)


def build_rows(ops):
    """The rows of every operator: its attributes (enumerable or open), then its optional inputs."""
    value_sets = {}
    for set_ops, name, values, default, _ in VALUE_SETS:
        for op in set_ops:
            value_sets[(op, name)] = (values, default)
    rows = []
    for op in ops:
        schema = schema_at(op, NEWEST_OPSET)
        attrs = {name: (a.required or op in ONE_OF, attr_default(a)) for name, a in schema.attributes.items()}
        inputs = [i.name for i in schema.inputs if i.option == onnx.defs.OpSchema.FormalParameterOption.Optional]
        notes = {}
        for set_ops, kind, name, default in OPSET18:
            if op in set_ops and (name not in (attrs if kind == "attribute" else inputs)):
                if kind == "attribute":
                    attrs[name] = (False, (default,) if default else None)
                else:
                    inputs.append(name)
                notes[(kind, name)] = "opset 18"
        for name, (required, default) in sorted(attrs.items()):
            if (op, name) in value_sets:
                values, table_default = value_sets[(op, name)]
                rows.append(Row(op, "attribute", name, values, table_default or default or (),
                                notes.get(("attribute", name), "")))
            else:
                rows.append(Row(op, "attribute", name, ("given",) if required else ("given", "default"),
                                () if required else ("default",), notes.get(("attribute", name), "")))
        for name in inputs:
            rows.append(Row(op, "input", name, ("present", "absent"), ("absent",), notes.get(("input", name), "")))
        for form_op, name, opsets in OLDER_FORMS:
            if form_op == op and name not in attrs:
                rows.append(Row(op, "attribute", name, ("given",), (), f"opsets {opsets}"))
    return rows


# ---- step 3: the models the tests run, and the values their nodes reach ----

def read_expectations(path):
    """The names of the node tests that do not pass (onnx_node_tests' expectations file)."""
    names = set()
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            names.add(line.split()[0])
    return names


@functools.lru_cache(maxsize=None)
def manifest_cases(folder):
    """The case names folder/manifest.json lists (export_test_models.py), or none."""
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        return frozenset()
    return frozenset(c["name"] for c in json.load(open(path)).get("cases", []))


def counted_models(dirs, not_passing):
    """(case name, path) of every model the tests run; and how many files were left out."""
    models, skipped = [], 0
    for top in dirs:
        if not os.path.isdir(top):
            raise SystemExit(f"onnx_attr_coverage: --models {top}: not a folder")
        for folder, subdirs, files in os.walk(top):
            subdirs.sort()
            for f in sorted(files):
                if not f.endswith(".onnx"):
                    continue
                case = os.path.basename(folder)
                if f == "model.onnx" and case.startswith("test_"):
                    ok = case not in not_passing and not case.endswith("_expanded")
                else:
                    case = f[:-len(".onnx")]
                    ok = case in manifest_cases(folder)
                if ok:
                    models.append((case, os.path.join(folder, f)))
                else:
                    skipped += 1
    return models, skipped


def node_values(row, node, attrs, input_names):
    """The value labels `node` reaches for `row` (empty: the row does not apply at its opset)."""
    if row.kind == "input":
        if row.name not in input_names:
            return []
        i = input_names.index(row.name)
        return ["present" if i < len(node.input) and node.input[i] else "absent"]
    a = attrs.get(row.name)
    if a is None:
        return list(row.defaults)
    if row.values in (("given",), ("given", "default")):
        return ["given"]
    v = onnx.helper.get_attribute_value(a)
    v = v if isinstance(v, list) else [v]
    return [x.decode() if isinstance(x, bytes) else str(x) for x in v]


def scan(models, ops, rows):
    """{(op, kind, name, value): {case: nodes}}, and rows for attributes in models that no row has."""
    by_op = collections.defaultdict(list)
    for r in rows:
        by_op[r.op].append(r)
    reached = collections.defaultdict(collections.Counter)
    extra = {}
    supported = set(ops)
    for case, path in models:
        try:
            model = onnx.load(path, load_external_data=False)
        except Exception as e:  # noqa: BLE001 (protobuf's DecodeError and friends)
            raise SystemExit(f"onnx_attr_coverage: {path}: not a readable ONNX model ({e})")
        opset = next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), None)
        if opset is None:
            continue
        for node in model.graph.node:
            if node.op_type not in supported or node.domain not in DEFAULT_DOMAINS:
                continue
            attr_names, input_names = names_at(node.op_type, opset)
            attrs = {a.name: a for a in node.attribute}
            op_rows = by_op[node.op_type]
            for name in sorted(set(attrs) - {r.name for r in op_rows if r.kind == "attribute"}):
                extra.setdefault((node.op_type, name), Row(node.op_type, "attribute", name, ("given",), (),
                                                           f"opset {opset}, not in the table"))
            for r in op_rows + [extra[(node.op_type, n)] for n in attrs if (node.op_type, n) in extra]:
                if r.kind == "attribute" and r.name not in attrs and r.name not in attr_names:
                    continue  # the node's opset has no such attribute: leaving it out chose no default
                for value in sorted(set(node_values(r, node, attrs, input_names))):
                    reached[(r.op, r.kind, r.name, value)][case] += 1
    return reached, list(extra.values())


# ---- step 4: the gaps file ----

GAP_LINE = re.compile(r"^(\S+) (input:)?([A-Za-z0-9_]+)=([^\s:]+)(?::\s*(.*))?$")


def read_gaps(path):
    """{key: reason}, and the errors of lines that do not parse, have no reason or repeat."""
    gaps, errors = {}, []
    for n, line in enumerate(open(path), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        m = GAP_LINE.match(text)
        if not m:
            errors.append(f"{path}:{n}: not 'Op attribute=value: why' or 'Op input:name=value: why': {text}")
            continue
        op, is_input, name, value, reason = m.groups()
        key = key_of(op, "input" if is_input else "attribute", name, value)
        if not (reason or "").strip():
            errors.append(f"{path}:{n}: {key} has no reason (write why no test reaches it after ': ')")
        if key in gaps:
            errors.append(f"{path}:{n}: {key} is listed twice")
        gaps[key] = (reason or "").strip()
    return gaps, errors


def check_gaps(rows, reached, gaps, gaps_path):
    """Errors: values reached by no model without a gap line, gap lines for reached or unknown values."""
    errors = []
    keys = set()
    for r in rows:
        for v in values_of(r, reached):
            k = key_of(r.op, r.kind, r.name, v)
            keys.add(k)
            hit = (r.op, r.kind, r.name, v) in reached
            if hit and k in gaps:
                errors.append(f"{gaps_path}: stale gap: {k} is reached by "
                              f"{example(reached[(r.op, r.kind, r.name, v)])}: remove its line")
            if not hit and k not in gaps:
                errors.append(f"{gaps_path}: {k} is reached by no test: add '{k}: why' (or a test)")
    for k in sorted(set(gaps) - keys):
        errors.append(f"{gaps_path}: gap {k} names no attribute value or input of a supported operator")
    return errors


# ---- step 5: the Markdown table ----

def values_of(row, reached):
    """The row's values: the table's, then values models reach that it lacks (sorted)."""
    seen = {k[3] for k in reached if k[:3] == (row.op, row.kind, row.name)}
    return list(row.values) + sorted(seen - set(row.values))


def example(cases):
    """How a value is reached: one model (the first by name; no counts, so that the doc changes
    only when coverage does, not with every model added)."""
    return f"{min(cases)}" + (f" and {len(cases) - 1} more" if len(cases) > 1 else "")


def markdown(rows, reached, gaps, ops, gaps_path):
    """The table (one row per operator and attribute or input) with the summary line on top."""
    lines, total, hit, explained = [], 0, 0, 0
    for r in rows:
        cells = []
        for v in values_of(r, reached):
            total += 1
            cases = reached.get((r.op, r.kind, r.name, v))
            if cases:
                hit += 1
                cells.append(f"`{v}`: {min(cases)}")
            else:
                reason = gaps.get(key_of(r.op, r.kind, r.name, v), "")
                explained += bool(reason)
                cells.append(f"`{v}`: **not reached**: {reason or 'NO REASON GIVEN'}")
        what = f"{'input ' if r.kind == 'input' else ''}{r.name}" + (f" ({r.note})" if r.note else "")
        lines.append(f"| {r.op} | {what} | {'<br>'.join(c.replace('|', '/') for c in cells)} |")
    plain = sorted(set(ops) - {r.op for r in rows})
    summary = (f"Attribute coverage: {hit} of {total} attribute and optional-input values of {len(ops)} "
               f"ONNX operators reached by the tests; {total - hit} not reached, {explained} of them with a "
               f"reason in {gaps_path}.")
    header = "| operator | attribute or input | values: a test model reaching each, or why none does |"
    out = [summary, "", header, "|---|---|---|"] + lines
    out += ["", "Operators without attributes or optional inputs: " + ", ".join(plain) + "."]
    return "\n".join(out) + "\n", summary


# ---- step 6: the doc ----

def doc_section(path):
    """The doc's lines and the indices of its begin and end marker lines."""
    lines = open(path).read().split("\n")
    marks = [line.strip() for line in lines]
    if marks.count(BEGIN) != 1 or marks.count(END) != 1:
        raise SystemExit(f"onnx_attr_coverage: {path}: needs one line '{BEGIN}' and one line '{END}' after it")
    b, e = marks.index(BEGIN), marks.index(END)
    if e < b:
        raise SystemExit(f"onnx_attr_coverage: {path}: '{END}' comes before '{BEGIN}'")
    return lines, b, e


def check_doc(path, table):
    """Errors: the doc's text between the markers differs from the table (with the first differences)."""
    lines, b, e = doc_section(path)
    current = "\n".join(lines[b + 1:e]).strip("\n")
    if current == table.strip("\n"):
        return []
    diff = list(difflib.unified_diff(current.split("\n"), table.strip("\n").split("\n"), f"{path} (now)",
                                     "from the models and gaps", lineterm="", n=0))
    shown = "\n".join(line[:200] for line in diff[:20]) + ("\n..." if len(diff) > 20 else "")
    return [f"{path}: the attribute coverage table differs from the models and gaps (rerun with --update-doc "
            f"{path} to accept):\n{shown}"]


def update_doc(path, table):
    """Replaces the doc's text between the markers with the table."""
    lines, b, e = doc_section(path)
    new = lines[:b + 1] + table.strip("\n").split("\n") + lines[e:]
    with open(path, "w") as f:
        f.write("\n".join(new))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ops", required=True, help="ONNX operator types Loom imports (onnx_node_tests --list-ops)")
    ap.add_argument("--models", nargs="+", required=True, help="folders searched for *.onnx (recursively)")
    ap.add_argument("--expectations", default=os.path.join(REPO, "tests/onnx/node_expectations.txt"))
    ap.add_argument("--gaps", default=os.path.join(REPO, "tests/onnx/attribute_gaps.txt"))
    ap.add_argument("--markdown", help="write the table here (default: stdout)")
    doc = ap.add_mutually_exclusive_group()
    doc.add_argument("--check-doc", metavar="DOC")
    doc.add_argument("--update-doc", metavar="DOC")
    args = ap.parse_args()

    ops = read_ops(args.ops)
    rows = build_rows(ops)
    models, skipped = counted_models(args.models, read_expectations(args.expectations))
    reached, extra = scan(models, ops, rows)
    rows = sorted(rows + extra, key=lambda r: (r.op, r.kind != "attribute", r.name))
    gaps, errors = read_gaps(args.gaps)
    errors += check_gaps(rows, reached, gaps, args.gaps)
    table, summary = markdown(rows, reached, gaps, ops, os.path.relpath(args.gaps, REPO))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    elif not (args.check_doc or args.update_doc):
        sys.stdout.write(table)
    if args.check_doc:
        errors += check_doc(args.check_doc, table)
    print(f"onnx_attr_coverage: {len(models)} models ({skipped} *.onnx files left out: not run by the tests). "
          f"{summary}", file=sys.stderr if not (args.markdown or args.check_doc or args.update_doc) else sys.stdout)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        return 1
    if args.update_doc:
        update_doc(args.update_doc, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
