"""from_torch: a PyTorch module traced by torch.fx, its calls mapped onto Loom's operators.

The module is traced symbolically (torch.fx) and run once on the example inputs, so every node's
concrete value is known. A node that depends on a model input and yields a tensor becomes Loom
operators (torch_ops.py has the mapping, one handler per call); every other node (parameters,
shapes, anything computed from them) is a constant PyTorch computed. Each mapped node's shape and
dtype are checked against PyTorch's as it is added.
"""
import dis
import inspect

import numpy as np
import torch
import torch.fx

from .. import _loom
from . import torch_ops


class _Proxy(torch.fx.Proxy):
    """torch.fx's proxy, unpacked as Python 3.11 runs `a, (b, c) = call(...)` (an LSTM's result):
    torch 1.13 finds the unpacking instruction by an index that Python 3.11's bytecode caches shift,
    so it is found here by its offset."""

    def __iter__(self):
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)


class _Tracer(torch.fx.Tracer):
    """torch.fx's tracer that stops at the modules torch_ops maps (and torch.nn's others, which
    then fail by name), and records each node's module path in node.meta['loom_module']."""

    def __init__(self):
        super().__init__()
        self._path = []

    def is_leaf_module(self, m, qualname):
        return type(m) in torch_ops.MODULES or super().is_leaf_module(m, qualname)

    def call_module(self, m, forward, args, kwargs):
        self._path.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._path.pop()

    def proxy(self, node):
        return _Proxy(node, self)

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["loom_module"] = self._path[-1] if self._path else ""
        return node


class _Recorder(torch.fx.Interpreter):
    """Runs the traced module, keeping every node's value as it was when the node computed it (a
    copy: a later in-place call, such as ReLU(inplace=True), changes the tensor it returned)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = _copy(v)
        return v


def _copy(v):
    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, (tuple, list)):
        return type(v)(_copy(x) for x in v)
    return v


class _Layer(torch.nn.Module):
    """One mapped layer given to from_torch on its own (its forward is not traced, only called).
    Explicit arguments: torch.fx 1.13 cannot trace a *args forward under Python 3.11."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


class _Layer3(_Layer):
    def forward(self, q, k, v):  # attention: query, key, value
        return self.layer(q, k, v)


def _holds_tensor(v):
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_holds_tensor(x) for x in v)
    return False


def describe_call(node, gm):
    """What a node calls, as a person reads it: "nn.LSTM", "torch.flatten", "Tensor.expand"."""
    if node.op == "call_module":
        m = gm.get_submodule(node.target)
        mod = type(m).__module__
        prefix = "nn." if mod.startswith("torch.nn") else mod + "."
        return prefix + type(m).__name__
    if node.op == "call_method":
        return "Tensor." + node.target
    t = node.target
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", str(t))
    if mod.startswith("torch.nn.functional"):
        return "F." + name
    if mod in ("_operator", "operator"):
        return "operator." + name
    if mod.startswith("torch"):
        return "torch." + name
    return (mod + "." if mod else "") + name


class Converter:
    """The state torch_ops' handlers read and extend: the Loom graph, each fx node's Loom value
    (an id, or a tuple of them), and the node being converted."""

    def __init__(self, gm, values, name):
        self.gm = gm
        self.values = values
        self.graph = _loom.Graph(name)
        self.ids = {}  # fx node -> Loom id (or tuple of ids) of the nodes that depend on inputs
        self.constants = {}  # fx node -> Loom id of its PyTorch value
        self.node = None

    # ---- where, and failing ----
    def where(self, node=None):
        node = node or self.node
        path = node.meta.get("loom_module", "")
        return f"from_torch: {'module ' + repr(path) if path else 'the top module'}, node {node.name!r} " \
               f"({describe_call(node, self.gm)})"

    def fail(self, why):
        raise _loom.ModelError(f"{self.where()}: {why}")

    # ---- reading arguments ----
    def is_dynamic(self, a):
        return isinstance(a, torch.fx.Node) and a in self.ids

    def value(self, a):
        """A static argument's Python value (nested lists and tuples resolved)."""
        if isinstance(a, torch.fx.Node):
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        if isinstance(a, slice):
            return slice(self.value(a.start), self.value(a.stop), self.value(a.step))
        if isinstance(a, dict):
            return {k: self.value(v) for k, v in a.items()}
        return a

    def tensor(self, a, like=None):
        """A tensor argument's Loom id: the value of a mapped node, or a constant (a static
        tensor, or a Python number as a scalar of `like`'s dtype)."""
        if isinstance(a, torch.fx.Node):
            if a in self.ids:
                v = self.ids[a]
                if isinstance(v, tuple):
                    self.fail(f"argument {a.name!r} is a tuple of tensors where a tensor is expected")
                return v
            v = self.values[a]
            if not isinstance(v, torch.Tensor):  # a number from shapes: a scalar of the other operand's type
                return self.tensor(v, like)
            if a not in self.constants:
                self.constants[a] = self.graph.add_constant(self._name(a.name), _numpy(v))
            return self.constants[a]
        if isinstance(a, torch.Tensor):
            return self.const(a, "_const")
        if isinstance(a, (bool, int, float)):
            dtype = self.graph.dtype(like) if like is not None else ("float32" if isinstance(a, float) else "int64")
            return self.const(np.array(a, dtype=dtype), "_scalar")
        self.fail(f"argument {a!r} is not a tensor")

    def dtype(self, id_):
        return self.graph.dtype(id_)

    def shape(self, id_):
        return self.graph.shape(id_)

    @property
    def out_shape(self):
        """The shape PyTorch's value of the node being converted has."""
        return tuple(self.values[self.node].shape)

    @property
    def module(self):
        return self.gm.get_submodule(self.node.target)

    # ---- adding ----
    def _name(self, base):
        return base.replace(".", "_")

    def add(self, op, inputs, attrs=None, suffix=""):
        return self.graph.add_op(op, list(inputs), attrs or {}, self._name(self.node.name + suffix))

    def const(self, value, suffix="_const"):
        base = self.node.name if self.node is not None else "constant"
        return self.graph.add_constant(self._name(base + suffix), _numpy(value))

    def scalar(self, v, like, suffix="_scalar"):
        return self.const(np.array(v, dtype=self.dtype(like)), suffix)

    # ---- the walk ----
    def run(self):
        for node in self.gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                v = self.values[node]
                if not isinstance(v, torch.Tensor):
                    self.fail("the example input is not a tensor")
                self.ids[node] = self.graph.add_input(node.target, list(v.shape), _dtype_name(v.dtype))
            elif node.op == "output":
                self._outputs(node.args[0])
            elif node.op == "get_attr" or not self._depends_on_input(node):
                continue  # a constant: PyTorch's value is used where a mapped node reads it
            elif not _holds_tensor(self.values[node]):
                if not _is_shape_query(node):
                    self.fail("a value computed from the input's data that is not a tensor (such as .item() or "
                              "a Python bool): Loom compiles one graph for every input, so it cannot depend on it")
                continue  # a shape, its rank or a size: fixed by the example inputs
            else:
                self._convert(node)
        return self.graph

    def _depends_on_input(self, node):
        found = []
        torch.fx.node.map_arg((node.args, node.kwargs), lambda a: found.append(a in self.ids))
        return any(found)

    def _convert(self, node):
        handler = torch_ops.handler_for(node, self.gm)
        if handler is None:
            self.fail("Loom has no mapping for this call (loom.frontend.torch_ops lists the calls it maps)")
        try:
            out = handler(self, node.args, node.kwargs)
        except _loom.Error as e:
            if str(e).startswith("from_torch:"):
                raise
            raise type(e)(f"{self.where()}: {e}") from None
        self.ids[node] = out
        self._check(node, out)

    def _check(self, node, out):
        """Loom's value has PyTorch's shape and dtype (a mapping error shows here, at its node)."""
        def pairs(o, r):  # (Loom id, PyTorch value), through nested tuples
            if isinstance(o, tuple) and isinstance(r, (tuple, list)):
                for a, b in zip(o, r):
                    yield from pairs(a, b)
            else:
                yield o, r

        for id_, t in pairs(out, self.values[node]):
            if id_ is None or not isinstance(t, torch.Tensor):
                continue
            if tuple(self.shape(id_)) != tuple(t.shape) or self.dtype(id_) != _dtype_name(t.dtype):
                self.fail(f"Loom's value is {self.dtype(id_)}{list(self.shape(id_))}, PyTorch's "
                          f"{_dtype_name(t.dtype)}{list(t.shape)}")

    def _outputs(self, result):
        flat = []

        def visit_ids(ids):  # a node's Loom ids, nested as its result is
            if isinstance(ids, tuple):
                for i in ids:
                    visit_ids(i)
            elif ids is not None:
                flat.append(ids)

        def visit(v):
            if isinstance(v, (tuple, list)):
                for x in v:
                    visit(x)
            elif isinstance(v, dict):
                for x in v.values():
                    visit(x)
            elif isinstance(v, torch.fx.Node):
                if v in self.ids:
                    visit_ids(self.ids[v])
                else:
                    flat.append(self.tensor(v))
            elif v is not None:
                self.fail(f"the module returns {type(v).__name__}; outputs are tensors")

        visit(result)
        self.graph.outputs = flat


_SHAPE_METHODS = {"size", "dim", "numel", "nelement", "ndimension"}
_SHAPE_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda"}


def _is_shape_query(node):
    """A call that reads only a tensor's shape, rank or type (static once the inputs are fixed)."""
    if node.op == "call_method":
        return node.target in _SHAPE_METHODS
    if node.op == "call_function":
        if node.target is getattr:
            return len(node.args) > 1 and node.args[1] in _SHAPE_ATTRIBUTES
        return node.target is len
    return False


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _numpy(v):
    if isinstance(v, torch.Tensor):
        return np.ascontiguousarray(v.detach().cpu().numpy())
    return np.ascontiguousarray(np.asarray(v))


def convert(module, example_inputs, name=None):
    """The Converter after the walk: its graph, and each fx node's Loom id and PyTorch value on the
    example inputs (what loom.compare lines up)."""
    if not isinstance(module, torch.nn.Module):
        raise _loom.TypeError(f"from_torch: module is a {type(module).__name__}, not a torch.nn.Module")
    training = [name or type(module).__name__ for name, m in module.named_modules() if m.training]
    if training:
        raise _loom.ModelError(f"from_torch: the module is in training mode ({', '.join(training[:3])}"
                               f"{', ...' if len(training) > 3 else ''}); call module.eval() first (Loom compiles "
                               "inference: batch norm's running statistics, no dropout)")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    for k, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            raise _loom.TypeError(f"from_torch: example_inputs[{k}] is a {type(x).__name__}, not a torch.Tensor")
    if type(module) in torch_ops.MODULES:  # a mapped layer alone: traced as a call of it (module path 'layer')
        module = (_Layer3 if len(example_inputs) == 3 else _Layer)(module)
    tracer = _Tracer()
    try:
        graph = tracer.trace(module)
    except Exception as e:  # torch.fx's own message says which Python construct it cannot trace
        raise _loom.ModelError(f"from_torch: torch.fx cannot trace {type(module).__name__}: {e}") from None
    gm = torch.fx.GraphModule(tracer.root, graph)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        raise _loom.ModelError(f"from_torch: {type(module).__name__}.forward takes {len(placeholders)} inputs, "
                               f"example_inputs has {len(example_inputs)}")
    recorder = _Recorder(gm)
    with torch.no_grad():
        recorder.run(*example_inputs)
    cv = Converter(gm, recorder.values, name or type(module).__name__)
    cv.run()
    return cv


def from_torch(module, example_inputs, name=None):
    return convert(module, example_inputs, name).graph
