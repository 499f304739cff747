"""The text form of a graph: `format_graph` (``str(graph)``) and `parse`, exact inverses.

One line per node, then the outputs and updates::

    graph {
      %0 = input {name='x'} : float32[32,784]
      %1 = parameter {name='dense/kernel'} : float32[784,64]
      %2 = constant {value=0.5} : float64[]
      %3 = projection(%0, %1) {activation='relu', n_in=1} : float32[32,64]  # train.py:12
      %4 = vjp(%3, %9) {needs=(False, True)} : (none, float32[784,64])
      output 'loss' = %8
      update 'dense/kernel' = %12
    }

Node ids count up from 0 in order; ``: type`` is ``dtype[dims]`` (``float32[]`` for 0-d) or, for
``vjp``, a tuple with ``none`` for inputs that get no gradient. Attributes use Python literal
syntax (plus ``inf``, ``nan``, ``slice(...)``, ``...``). A constant's value is a Python scalar
(a weak scalar), ``array(<nested list>, 'dtype')`` (exact: floats are written with ``repr``) or
``file('constants/c7.npy')``, an array stored beside the text by `kerasrs.graph.files.save`.
``str(graph)`` writes arrays of up to `INLINE` elements inline and larger ones as files.
"""

import ast
import math
import re

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.graph.ir import Graph, Node, TensorType, type_of

INLINE = 64  # constants up to this many elements are written inline by str(graph)


# -- writing -------------------------------------------------------------------------------------
def format_graph(graph, files=None):
    """The text of ``graph``. ``files`` (node id -> relative path) names the constants stored
    as files; by default those with more than `INLINE` elements, as ``constants/c<id>.npy``."""
    if files is None:
        files = {i: f"constants/c{i}.npy" for i, n in enumerate(graph.nodes)
                 if n.op == "constant" and isinstance(n.value, np.ndarray) and
                 n.value.size > INLINE}
    lines = ["graph {"]
    for i, node in enumerate(graph.nodes):
        lines.append("  " + format_node(i, node, files.get(i)))
    for name, j in graph.outputs.items():
        lines.append(f"  output {name!r} = %{j}")
    for name, j in graph.updates.items():
        lines.append(f"  update {name!r} = %{j}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def format_node(i, node, file=None):
    """One line: ``%i = op(%a, %b) {attrs} : type  # site``."""
    refs = f"({', '.join(f'%{j}' for j in node.inputs)})" if node.inputs else ""
    attrs = dict(node.attrs)
    if node.op == "constant":
        attrs["value"] = _File(file) if file else node.value
    body = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(attrs.items()))
    line = f"%{i} = {node.op}{refs}" + (f" {{{body}}}" if body else "") + \
        f" : {format_type(node.type)}"
    return line + (f"  # {node.site}" if node.site else "")


def format_type(t):
    if isinstance(t, tuple):
        return "(" + ", ".join("none" if x is None else format_type(x) for x in t) + ")"
    return str(t)


class _File(str):
    """A constant stored in a file: written as ``file('path')``."""


def format_value(value):
    """An attribute or constant value in the literal syntax `parse_value` reads."""
    if isinstance(value, _File):
        return f"file({str(value)!r})"
    if isinstance(value, np.ndarray):
        return f"array({_nested(value)}, {value.dtype.name!r})"
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, tuple):
        items = ", ".join(format_value(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, slice):
        return f"slice({value.start!r}, {value.stop!r}, {value.step!r})"
    if value is Ellipsis:
        return "..."
    return repr(value)


def _float(x):
    if math.isnan(x):
        return "nan"
    return repr(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _nested(array):
    if array.ndim == 0:
        return format_value(array.item() if array.dtype.kind != "f" else float(array))
    if array.dtype.kind == "f" or array.dtype.name == "bfloat16":
        return "[" + ", ".join(_nested(a) for a in array) + "]"
    return repr(array.tolist())


def is_attr_value(value):
    """Whether an attribute value can be written as text (and read back equal)."""
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, slice):
        return all(is_attr_value(v) for v in (value.start, value.stop, value.step))
    if isinstance(value, tuple):
        return all(is_attr_value(v) for v in value)
    return False


# -- reading -------------------------------------------------------------------------------------
_NODE = re.compile(r"%(\d+) = ([A-Za-z_][\w.]*)")
_ROOT = re.compile(r"(output|update) ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") = %(\d+)$")


def parse(text, arrays=None):
    """The `Graph` written by `format_graph`.

    Args:
        text: str.
        arrays: optional ``{relative path: array}`` for constants written as ``file(...)``.

    Returns:
        A `Graph` equal to the one written (parameters unbound).

    Raises:
        ValueError: naming the line, for any syntax error, a node id out of order, an
            unknown or non-numeric dtype, a constant whose value is not of its declared type,
            a ``file(...)`` constant missing from ``arrays``, a second output or update of one
            name, two inputs (or parameters) of one name and different types, or a structural
            node (``vjp``, ``pick``, ``gradient``...) without the inputs or attributes it needs.
        TypeError: if ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"kerasrs.graph.parse: the text must be a str. Received: {type(text)}")
    lines = [s.strip() for s in text.splitlines()]
    lines = [s for s in lines if s and not s.startswith("#")]
    if not lines or lines[0] != "graph {" or lines[-1] != "}":
        raise ValueError("kerasrs.graph.parse: the text must start with 'graph {' and end with "
                         f"'}}'. Received: {text[:60]!r}")
    nodes, outputs, updates = [], {}, {}
    for number, line in enumerate(lines[1:-1], start=2):
        try:
            root = _ROOT.match(line)
            if root:
                target = outputs if root.group(1) == "output" else updates
                name = ast.literal_eval(root.group(2))
                if name in target:
                    raise ValueError(f"a second {root.group(1)} named {name!r}")
                target[name] = int(root.group(3))
                continue
            nodes.append(_parse_node(line, len(nodes), arrays or {}))
        except (ValueError, SyntaxError, KeyError, TypeError) as e:
            raise ValueError(f"kerasrs.graph.parse: line {number}: {e}. Received: {line!r}") \
                from None
    try:
        return Graph(nodes, outputs, updates)
    except ValueError as e:
        raise ValueError(f"kerasrs.graph.parse: {e}") from None


def _parse_node(line, expected, arrays):
    match = _NODE.match(line)
    if not match:
        raise ValueError("expected '%<id> = <op>...', 'output ...' or 'update ...'")
    if int(match.group(1)) != expected:
        raise ValueError(f"node ids must count up from 0; expected %{expected}")
    op, pos = match.group(2), match.end()
    inputs = ()
    if line.startswith("(", pos):
        end = _closing(line, pos, "(", ")")
        inputs = tuple(_ref(r) for r in line[pos + 1:end].split(",") if r.strip())
        pos = end + 1
    attrs = {}
    if line.startswith(" {", pos):
        end = _closing(line, pos + 1, "{", "}")
        attrs = parse_attrs(line[pos + 2:end], arrays)
        pos = end + 1
    rest = line[pos:]
    if not rest.startswith(" : "):
        raise ValueError("expected ' : <type>' after the node")
    type_text, _, site = rest[3:].partition("  # ")
    value = attrs.pop("value", None) if op == "constant" else None
    node_type = parse_type(type_text.strip())
    if isinstance(value, np.ndarray) and value.size == 0 and \
            math.prod(node_type.shape) == 0:  # nested lists lose empty axes
        value = value.reshape(node_type.shape)
    if op == "constant":
        _check_constant(value, node_type)
    elif op in ("input", "parameter") and not isinstance(attrs.get("name"), str):
        raise ValueError(f"{op} node without a name: write {{name='...'}}")
    return Node(op, inputs, attrs, node_type, value, site or None)


def _check_constant(value, declared):
    """A constant's value (an inline array or scalar, or an array file) must be of the type
    its line declares: later nodes were typed, and a program plans its buffers, from that."""
    if not isinstance(value, (np.ndarray, bool, int, float)):
        raise ValueError(f"a constant needs a value=...; got {value!r}")
    actual = type_of(value)
    if actual != declared:
        raise ValueError(f"the constant's value is {actual}, but the line declares {declared}")


def _ref(text):
    text = text.strip()
    if not re.fullmatch(r"%\d+", text):
        raise ValueError(f"expected a node reference like %3, got {text!r}")
    return int(text[1:])


def _outside_quotes(text, start=0):
    """``(index, char)`` for each character of ``text`` from ``start`` that is not inside a
    quoted string (the quotes themselves are skipped too)."""
    quote, i = None, start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        else:
            yield i, c
        i += 1


def _closing(line, start, opening, closing):
    """The index of the bracket closing the one at ``start`` (skipping quoted strings)."""
    depth = 0
    for i, c in _outside_quotes(line, start):
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unclosed {opening!r}")


def parse_type(text):
    """``float32[2,3]`` -> TensorType; ``(none, float32[2])`` -> a tuple."""
    if text.startswith("("):
        inner = text[1:-1].strip()
        parts = [p.strip() for p in re.split(r",(?![^\[]*\])", inner)] if inner else []
        return tuple(None if p == "none" else parse_type(p) for p in parts)
    match = re.fullmatch(r"([A-Za-z_]\w*)\[([\d,\s]*)\]", text)
    if not match:
        raise ValueError(f"expected a type like float32[2,3], got {text!r}")
    dtype = backend_module.standardize_dtype(match.group(1))
    if dtype.kind in "OSUMm" or dtype.type is np.void:  # no objects, strings, dates, records
        raise ValueError(f"not a tensor dtype: {match.group(1)!r}")
    dtype = dtype.name
    dims = tuple(int(d) for d in match.group(2).split(",") if d.strip())
    return TensorType(dtype, dims)


def parse_attrs(text, arrays=None):
    """``key=value, ...`` -> dict (values as `format_value` writes them; a key is any
    identifier, Python keywords included)."""
    attrs = {}
    for item in _top_level_items(text):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not key.isidentifier():
            raise ValueError(f"attributes must be key=value pairs, got {item.strip()!r}")
        attrs[key] = parse_value(ast.parse(value.strip(), mode="eval").body, arrays or {})
    return attrs


def _top_level_items(text):
    """``text`` split at the commas outside brackets and quoted strings."""
    items, depth, start = [], 0, 0
    for i, c in _outside_quotes(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    last = text[start:]
    return items + [last] if last.strip() else items


_NAMES = {"inf": math.inf, "nan": math.nan, "None": None, "True": True, "False": False}


def parse_value(node, arrays):
    """Evaluate one literal of the attribute syntax (an `ast` node); nothing else runs."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -parse_value(node.operand, arrays)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(parse_value(e, arrays) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [parse_value(a, arrays) for a in node.args]
        if node.func.id == "slice" and len(args) == 3:
            return slice(*args)
        if node.func.id == "array" and len(args) == 2:
            dtype = backend_module.standardize_dtype(args[1])
            return np.array(_as_lists(args[0]), dtype=np.float64 if dtype.kind == "f" or
                            dtype.name == "bfloat16" else dtype).astype(dtype)
        if node.func.id == "file" and len(args) == 1:
            if args[0] not in arrays:
                raise ValueError(f"constant file {args[0]!r} not given (parse(text, arrays=...) "
                                 f"or kerasrs.graph.load(directory))")
            return np.asarray(arrays[args[0]])
    raise ValueError(f"not a literal of the graph syntax: {ast.unparse(node)!r}")


def _as_lists(value):
    return [_as_lists(v) for v in value] if isinstance(value, tuple) else value
