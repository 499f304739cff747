"""The graph itself: typed nodes in topological order, named outputs and parameter updates.

A `Graph` is immutable. Node ``i`` is ``graph.nodes[i]`` and its inputs are ids of earlier
nodes, so the tuple is a topological order and every pass is one sweep from the leaves up
(`Builder` makes the new graph). Node kinds (``node.op``):

- ``input``: fed on every run, named by ``attrs["name"]``;
- ``parameter``: a `Variable` bound by name (``graph.bindings``), read by the program and
  overwritten in place by ``graph.updates``;
- ``constant``: ``node.value``, a NumPy array of any rank or a Python scalar (a *weak* scalar:
  NumPy keeps the other operand's dtype, as in eager code);
- ``gradient``: ``inputs = (target, of)`` or ``(target, of, seed)``: d target / d ``of`` (the
  target's sum, or its product with ``seed``); `kerasrs.graph.differentiate` replaces it;
- ``assert_computed``: the identity on its input, which must be computed anyway (see
  `kerasrs.graph.passes.cse`); running a graph that still holds one is an error;
- ``vjp`` and ``pick``: made by differentiation: ``vjp(F, gy)`` runs the `Function.backward` of
  the op node ``F`` (the instance that ran ``F``'s forward in the same run) and gives one
  gradient per input of ``F`` (None where ``attrs["needs"]`` is False); ``pick`` takes one;
- ``saved``: ``inputs = (F,)``: the array ``attrs["attr"]`` that the instance running op node
  ``F`` computed on the side (its registry entry lists it in ``saved``: the batch statistics of
  ``FusedBatchNorm``); a constant for differentiation;
- any other string: an op from `kerasrs.graph.registry`.
"""

import dataclasses

import numpy as np

from kerasrs.graph import registry

LEAVES = ("input", "parameter", "constant")
STRUCTURAL = LEAVES + ("gradient", "assert_computed", "vjp", "pick", "saved")
FUNCTION_USERS = ("vjp", "saved")  # nodes that use the Function instance of their first input


@dataclasses.dataclass(frozen=True)
class TensorType:
    """The static type of a node's value: dtype name and shape (a tuple of ints)."""

    dtype: str
    shape: tuple

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __str__(self):
        return f"{self.dtype}[{','.join(str(n) for n in self.shape)}]"


def type_of(value):
    """The `TensorType` of an array or Python scalar (weak scalars: float64, int64, bool)."""
    if isinstance(value, bool):
        return TensorType("bool", ())
    if isinstance(value, int):
        return TensorType("int64", ())
    if isinstance(value, float):
        return TensorType("float64", ())
    return TensorType(value.dtype.name, tuple(int(n) for n in value.shape))


def value_key(value):
    """A hashable key equal for equal constants: bit-exact for arrays (so ``-0.0`` and ``0.0``
    differ) except that all NaNs are one NaN (the text writes ``nan``), ``(type, repr)`` for
    Python scalars."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float)):
        return type(value).__name__, repr(value)
    array = np.ascontiguousarray(value)
    if (array.dtype.kind == "f" or array.dtype.name == "bfloat16") and np.isnan(array).any():
        array = np.where(np.isnan(array), np.array(np.nan, array.dtype), array)
    return array.dtype.str, array.shape, array.tobytes()


def freeze(value):
    """``value`` (an attribute) as a hashable key: lists become tuples, slices tagged tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, slice):
        return "__slice__", value.start, value.stop, value.step
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, float) and value != value:
        return "__nan__"
    return value


@dataclasses.dataclass(frozen=True, eq=False)
class Node:
    """One node. ``type`` is a `TensorType`, or for ``vjp`` a tuple of them (None for inputs
    that get no gradient). ``site`` (``file:line`` of the user code that made it) is shown as a
    comment and ignored by equality and CSE."""

    op: str
    inputs: tuple = ()
    attrs: dict = dataclasses.field(default_factory=dict)
    type: object = None
    value: object = None
    site: str = None

    def key(self):
        """Structural identity: op, inputs, attributes, type and constant value."""
        return (self.op, self.inputs, freeze(self.attrs), self.type, value_key(self.value))

    def __eq__(self, other):
        return isinstance(other, Node) and self.key() == other.key()

    def __hash__(self):
        return hash(self.key())

    @property
    def name(self):
        return self.attrs.get("name")


class Graph:
    """An immutable program: ``nodes`` (topological), ``outputs`` (name -> node id) and
    ``updates`` (parameter name -> id of its new value). ``bindings`` (parameter name ->
    `Variable`) is the state a run reads and writes; it is not part of equality.

    Three conveniences come from the modules that build on this one (``kerasrs.graph``'s
    ``__init__`` installs them; this module may not import them): ``str(graph)`` is the text
    form (`kerasrs.graph.text.format_graph`), ``graph.save(directory)`` writes it with every
    array (`kerasrs.graph.files.save`) and ``graph.run(**feeds)`` runs it once, unfused
    (`kerasrs.graph.program.run`).
    """

    def __init__(self, nodes, outputs, updates=None, bindings=None):
        self.nodes = tuple(nodes)
        self.outputs = dict(outputs)
        self.updates = dict(updates or {})
        self.bindings = dict(bindings or {})
        _check(self)

    # -- views -------------------------------------------------------------------------------
    def parameter_ids(self):
        """{parameter name: node id}."""
        return {n.name: i for i, n in enumerate(self.nodes) if n.op == "parameter"}

    def input_ids(self):
        """{input name: node id}, in graph order."""
        return {n.name: i for i, n in enumerate(self.nodes) if n.op == "input"}

    def consumers(self):
        """A list: for each node id, the ids of the nodes that use it (in order)."""
        users = [[] for _ in self.nodes]
        for i, node in enumerate(self.nodes):
            for j in node.inputs:
                users[j].append(i)
        return users

    def roots(self):
        """Ids whose values leave the graph: outputs and update values, in that order."""
        return list(self.outputs.values()) + [self.updates[k] for k in self.updates]

    def with_bindings(self, bindings):
        """This graph with more parameter bindings (``{name: Variable}``)."""
        return Graph(self.nodes, self.outputs, self.updates, {**self.bindings, **bindings})

    # -- equality ----------------------------------------------------------------------------------
    def __eq__(self, other):
        return isinstance(other, Graph) and self.nodes == other.nodes and \
            list(self.outputs.items()) == list(other.outputs.items()) and \
            sorted(self.updates.items()) == sorted(other.updates.items())

    __hash__ = None

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        return f"<Graph {len(self.nodes)} nodes, outputs {list(self.outputs)}, " \
               f"updates {list(self.updates)}>"



def _check(graph):
    """Raise ValueError unless every input id is an earlier node, every structural node is
    well formed, the inputs (and the parameters) of one name are of one type, and every root
    exists and is no vjp."""
    leaves = {}  # (kind, name) -> its first node: one name, one value (CSE merges them)
    for i, node in enumerate(graph.nodes):
        for j in node.inputs:
            if not 0 <= j < i:
                raise ValueError(f"Graph: node %{i} ({node.op}) uses %{j}, which is not an "
                                 f"earlier node. Received: inputs {node.inputs}")
        if node.op in STRUCTURAL:
            _check_structural(graph, i, node)
        if node.op in ("input", "parameter"):
            first = leaves.setdefault((node.op, node.name), i)
            if graph.nodes[first].type != node.type:
                raise ValueError(f"Graph: two {node.op} nodes named {node.name!r} (%{first} "
                                 f"and %{i}) of different types; a name binds one value. "
                                 f"Received: {graph.nodes[first].type} and {node.type}")
    params = graph.parameter_ids()
    for name, j in list(graph.outputs.items()) + list(graph.updates.items()):
        if not 0 <= j < len(graph.nodes):
            raise ValueError(f"Graph: {name!r} refers to %{j}, but the graph has "
                             f"{len(graph.nodes)} nodes.")
        if graph.nodes[j].op == "vjp":
            raise ValueError(f"Graph: {name!r} is %{j}, a vjp node: its gradients are "
                             f"reached through pick nodes.")
    for name in graph.updates:
        if name not in params:
            raise ValueError(f"Graph: update of {name!r}, which is no parameter of the graph. "
                             f"Received: parameters {sorted(params)}")


# A structural node's number of inputs (least, most) and the attributes it needs, of what type
_ARITY = {"input": (0, 0), "parameter": (0, 0), "constant": (0, 0), "gradient": (2, 3),
          "assert_computed": (1, 1), "vjp": (2, 2), "pick": (1, 1), "saved": (1, 1)}
_NEEDS = {"input": ("name", str), "parameter": ("name", str), "vjp": ("needs", tuple),
          "pick": ("index", int), "saved": ("attr", str)}


def _check_structural(graph, i, node):
    """Raise ValueError for a structural node (a written graph's line) whose inputs or
    attributes its step could not use: it failed deep inside a run, naming nothing."""
    least, most = _ARITY[node.op]
    where = f"Graph: %{i} = {node.op}(...)"
    if not least <= len(node.inputs) <= most:
        raise ValueError(f"{where} takes {least}" + (f" to {most}" if most > least else "") +
                         f" inputs. Received: {len(node.inputs)}")
    attr, kind = _NEEDS.get(node.op, (None, None))
    value = node.attrs.get(attr)
    if attr is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise ValueError(f"{where} needs the attribute {attr!r} ({kind.__name__}). "
                         f"Received: attributes {node.attrs}")
    if node.op in FUNCTION_USERS and graph.nodes[node.inputs[0]].op in STRUCTURAL:
        raise ValueError(f"{where} takes an op node first (its Function's work is used). "
                         f"Received: %{node.inputs[0]} ({graph.nodes[node.inputs[0]].op})")
    if node.op == "pick":
        source = graph.nodes[node.inputs[0]].type
        if not isinstance(source, tuple) or not 0 <= node.attrs["index"] < len(source):
            raise ValueError(f"{where} picks item {node.attrs['index']} of %{node.inputs[0]}, "
                             f"which is not a tuple of that many. Received: type {source}")


class Builder:
    """Appends nodes for a new graph; ``add`` returns the new node's id.

    With ``dedupe=True`` a node equal to an existing one (`Node.key`) is not added again: its
    id is returned (structural hashing, used by CSE). Ops marked impure in the registry are
    never merged.
    """

    def __init__(self, dedupe=False):
        self.nodes = []
        self._index = {} if dedupe else None

    def add(self, op, inputs=(), attrs=None, type=None, value=None, site=None):
        node = Node(op, tuple(inputs), dict(attrs or {}), type, value, site)
        if self._index is None or not _mergeable(node):
            self.nodes.append(node)
            return len(self.nodes) - 1
        key = node.key()
        found = self._index.get(key)
        if found is None:
            self.nodes.append(node)
            found = self._index[key] = len(self.nodes) - 1
        return found

    def copy(self, node, remap):
        """Append ``node`` with its inputs renamed through ``remap`` (old id -> new id)."""
        return self.add(node.op, [remap[j] for j in node.inputs], node.attrs, node.type,
                        node.value, node.site)

    def type(self, i):
        return self.nodes[i].type

    def graph(self, outputs, updates=None, bindings=None):
        return Graph(self.nodes, outputs, updates, bindings)


def _mergeable(node):
    return node.op in STRUCTURAL or registry.get(node.op).pure
