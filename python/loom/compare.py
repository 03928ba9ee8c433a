"""loom.compare: a PyTorch module and Loom side by side, layer by layer.

The module is converted by from_torch; every node of the traced module that Loom computes (a
"layer": a module call, a function, a method) becomes an output of the Loom model too, so one run
of each compiled variant gives Loom's value of every layer, compared with PyTorch's value of the
same node on the same inputs. Columns: "float" (Loom's float model on the CPU), "int8" (the model
quantized by Loom, on the CPU) and one per accelerator backend asked for (the int8 model with its
int8 layers on the accelerator, run on that backend; each value is also checked bit for bit
against the CPU's int8 value, the cross-check between Loom's devices).

A layer's error is the largest absolute difference from PyTorch divided by PyTorch's largest
magnitude at that layer. The first layer whose error exceeds the column's tolerance is that
column's first divergence.
"""
import os
import tempfile

import numpy as np

from . import _loom

DEFAULT_TOLERANCE = {"float": 1e-4, "int8": 0.25}


class Comparison:
    """The result of loom.compare: records (one dict per layer, in the traced order, which
    pandas.DataFrame takes as they are), the columns, their tolerances and first divergences."""

    def __init__(self, columns, tolerance, records):
        self.columns = columns
        self.tolerance = tolerance
        self.records = records
        self.first_divergence = {}
        for c in columns:
            self.first_divergence[c] = next((r for r in records if r[c] > tolerance[c]), None)
        self.first_mismatch = {}  # accelerator backends: the first layer not bit-exact with CPU int8
        for c in columns:
            if c not in ("float", "int8"):
                self.first_mismatch[c] = next((r for r in records if not r[c + "_equals_int8"]), None)

    def table(self):
        head = f"{'#':>4}  {'node':<28} {'module':<24} {'call':<22} {'shape':<18}" + "".join(
            f" {c:>10}" for c in self.columns)
        lines = [head, "-" * len(head)]
        for r in self.records:
            cells = ""
            for c in self.columns:
                mark = "*" if self.first_divergence[c] is r else " "
                if c in self.first_mismatch and not r[c + "_equals_int8"]:
                    mark = "!"
                cells += f" {r[c]:>9.2e}{mark}"
            lines.append(f"{r['layer']:>4}  {r['node'][:28]:<28} {r['module'][:24]:<24} {r['call'][:22]:<22} "
                         f"{str(list(r['shape']))[:18]:<18}{cells}")
        lines.append("")
        for c in self.columns:
            d = self.first_divergence[c]
            lines.append(f"{c}: " + (f"first error above {self.tolerance[c]:g} at layer {d['layer']} "
                                     f"'{d['node']}' ({d['call']} in '{d['module']}'), {d[c]:.3g}"
                                     if d else f"every layer within {self.tolerance[c]:g}"))
            if c in self.first_mismatch:
                m = self.first_mismatch[c]
                lines.append(f"{c}: " + (f"first layer that differs from int8 on the CPU: {m['layer']} '{m['node']}'"
                                         if m else "every layer equals int8 on the CPU bit for bit"))
        lines.append("(* first divergence; ! not bit-exact with int8 on the CPU)")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def _error(got, want):
    """Largest |got - want| over want's largest magnitude; infinite where Loom has NaN or infinity
    that PyTorch has not (so it counts as a divergence): graph::layer_error, as `loom compare`."""
    return _loom.layer_error(np.asarray(got), np.asarray(want))


def compare(module, example_inputs, *, quantize=None, calibrate=16, backends=(), config=None, tolerance=None):
    """compare(module, example_inputs, *, quantize=None, calibrate=16, backends=(), config=None,
    tolerance=None) -> Comparison

    Runs `module` (a torch.nn.Module in eval mode) and Loom on `example_inputs` and reports each
    layer's error: Loom's float model on the CPU; with quantize='int8' (calibrated on `calibrate`,
    as loom.compile reads it) the int8 model on the CPU; and for each name in `backends` ('fsim',
    'rtl', 'systemc', ...; int8 implied) the int8 model on the accelerator of `config`, on that
    backend. `tolerance` overrides DEFAULT_TOLERANCE per column kind ('float', 'int8') or per
    backend name.
    """
    import torch
    from .frontend import torch_fx

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    backends = list(backends)
    if backends and quantize is None:
        quantize = "int8"
    cv = torch_fx.convert(module, example_inputs)
    g = cv.graph

    # The layers: mapped fx nodes with one Loom value each, in traced order, each value once.
    layers, seen = [], set(g.inputs)
    for node in cv.gm.graph.nodes:
        id_ = cv.ids.get(node)
        if node.op == "placeholder" or id_ is None or isinstance(id_, tuple) or id_ in seen:
            continue
        if not isinstance(cv.values[node], torch.Tensor):
            continue
        seen.add(id_)
        layers.append((node, id_))
    outputs = list(g.outputs)
    position = {id_: k for k, id_ in enumerate(outputs)}
    for _, id_ in layers:
        if id_ not in position:
            position[id_] = len(outputs)
            outputs.append(id_)
    g.outputs = outputs

    inputs = [x.detach().cpu().numpy() for x in example_inputs]
    columns, values = ["float"], {"float": _loom.compile(g).run(*inputs)}
    if quantize is not None:
        columns.append("int8")
        values["int8"] = _loom.compile(g, quantize=quantize, calibrate=calibrate).run(*inputs)
    if backends:  # one accelerator build (quantized once), loaded again for each further backend
        accel = _loom.compile(g, target="accel", quantize=quantize, calibrate=calibrate, config=config,
                              backend=backends[0])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "accel.loom")
            if len(backends) > 1:
                accel.save(path)
            for k, b in enumerate(backends):
                columns.append(b)
                values[b] = (accel if k == 0 else _loom.load(path, backend=b)).run(*inputs)

    tol = {}
    for c in columns:
        kind = "float" if c == "float" else "int8"
        tol[c] = (tolerance or {}).get(c, (tolerance or {}).get(kind, DEFAULT_TOLERANCE[kind]))
    records = []
    for k, (node, id_) in enumerate(layers):
        want = cv.values[node].detach().cpu().numpy()
        r = {"layer": k, "node": node.name, "module": node.meta.get("loom_module", ""),
             "call": torch_fx.describe_call(node, cv.gm), "shape": tuple(want.shape)}
        for c in columns:
            got = values[c][position[id_]]
            r[c] = _error(got, want)
            if c not in ("float", "int8"):
                r[c + "_equals_int8"] = bool(np.array_equal(got, values["int8"][position[id_]]))
        records.append(r)
    return Comparison(columns, tol, records)
