"""A graph on disk: ``graph.txt`` plus one ``.npy`` file per array.

Layout of the directory::

    graph.txt                      the text form (`kerasrs.graph.text`)
    constants/c<id>.npy            every array constant, referenced as file('constants/c7.npy')
    parameters/<name>.npy          every parameter's current value, by its name
                                   (``dense/kernel`` -> ``parameters/dense/kernel.npy``)

Each file is written to a temporary name and renamed into place, arrays first and the text
last, so an interrupted save never leaves a ``graph.txt`` that refers to missing arrays.
"""

import math
import os
import urllib.parse

import numpy as np

from kerasrs import backend as backend_module
from kerasrs.autodiff import Variable
from kerasrs.graph import text

TEXT = "graph.txt"


def parameter_path(name):
    """The relative file of parameter ``name``: its ``/``-separated parts as folders, percent-
    encoded (``%`` too, so distinct names get distinct files); a name with an empty part is one
    encoded part, and a part ``.`` or ``..`` has its dots encoded (it cannot leave the folder)."""
    parts = name.split("/")
    if any(p == "" for p in parts):
        parts = [name]
    parts = [urllib.parse.quote(p, safe="-_") for p in parts]
    parts = [p.replace(".", "%2E") if p in (".", "..") else p for p in parts]
    return "parameters/" + "/".join(parts) + ".npy"


def save(graph, directory):
    """Write ``graph`` into ``directory`` (created if needed; files there are replaced).

    Raises:
        ValueError: if a parameter has no bound variable (there is no value to write).
    """
    files = {i: f"constants/c{i}.npy" for i, n in enumerate(graph.nodes)
             if n.op == "constant" and isinstance(n.value, np.ndarray)}
    for i, path in files.items():
        _write_array(directory, path, graph.nodes[i].value)
    for name in graph.parameter_ids():
        variable = graph.bindings.get(name)
        if variable is None:
            raise ValueError(f"kerasrs.graph.save: parameter {name!r} has no bound variable, so "
                             "there is no value to save. Bind it first (graph.with_bindings).")
        _write_array(directory, parameter_path(name),
                     backend_module.convert_to_numpy(variable.data))
    _write(directory, TEXT, text.format_graph(graph, files).encode())


def load(directory):
    """The graph saved in ``directory``, its parameters bound to new `Variable`s holding the
    saved values (on the current backend).

    Raises:
        FileNotFoundError: if ``graph.txt`` or an array file is missing (naming it).
        ValueError: for a malformed text or a path that leaves the directory.
    """
    with open(os.path.join(directory, TEXT), encoding="utf-8") as f:
        graph = text.parse(f.read(), arrays=_Arrays(directory))
    bindings = {}
    for name, i in graph.parameter_ids().items():
        value = _read_array(directory, parameter_path(name))
        want = graph.nodes[i].type
        if value.dtype.name != want.dtype or value.shape != want.shape:
            raise ValueError(f"kerasrs.graph.load: {parameter_path(name)} holds "
                             f"{value.dtype.name}{list(value.shape)}; the graph declares {want}.")
        variable = Variable(value, dtype=value.dtype, name=name.rsplit("/", 1)[-1])
        variable.path = name
        bindings[name] = variable
    return graph.with_bindings(bindings)


class _Arrays:
    """The ``arrays`` mapping `text.parse` reads ``file(...)`` constants from."""

    def __init__(self, directory):
        self.directory = directory

    def __contains__(self, path):
        return True  # a missing file is reported by __getitem__, naming it

    def __getitem__(self, path):
        return _read_array(self.directory, path)


def _inside(directory, path):
    full = os.path.realpath(os.path.join(directory, path))
    if not full.startswith(os.path.realpath(directory) + os.sep):
        raise ValueError(f"kerasrs.graph: the array path {path!r} leaves the graph's directory "
                         f"{directory!r}.")
    return full


_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
            (2, 0): np.lib.format.read_array_header_2_0}  # others: np.load checks them


def _read_array(directory, path):
    """The array in ``path`` (never unpickled). A file that does not start as a ``.npy``
    file is refused naming it (NumPy would say it holds pickled data and how to load that)."""
    full = _inside(directory, path)
    with open(full, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise ValueError(f"kerasrs.graph.load: {path} is not a .npy file.")
        f.seek(0)
        try:  # the header's shape against the file's size, before NumPy allocates for it
            read = _HEADERS.get(np.lib.format.read_magic(f))
            shape, _, dtype = read(f) if read else ((), False, np.dtype("u1"))
        except (ValueError, SyntaxError) as e:
            raise ValueError(f"kerasrs.graph.load: {path} has a malformed .npy header: "
                             f"{e}") from None
        size = os.fstat(f.fileno()).st_size - f.tell()
    if not dtype.hasobject and size < math.prod(shape) * dtype.itemsize:
        raise ValueError(f"kerasrs.graph.load: {path} declares {dtype.name}{list(shape)} "
                         f"({math.prod(shape) * dtype.itemsize} bytes) but holds {size} "
                         "bytes of data")
    return np.load(full, allow_pickle=False)


def _write_array(directory, path, array):
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    _write(directory, path, buffer.getvalue())


def _write(directory, path, data):
    full = _inside(directory, path) if os.path.isdir(directory) else \
        os.path.join(directory, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    temporary = f"{full}.tmp-{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, full)
