"""`kerasrs.graph.load` and `parse` on edited or hostile files: every array must be of the type
its line declares, and the text names only tensor dtypes; nothing is unpickled."""

import re

import numpy as np
import pytest

import kerasrs
from kerasrs import graph, ops


def _saved(tmp_path):
    w = kerasrs.Variable(np.ones((4,), "float32"), name="w")
    table = np.arange(16, dtype="float32").reshape(4, 4)
    g = graph.trace(lambda x: {"y": ops.matmul(x, graph.constant(table)) * w},
                    x=np.ones((2, 4), "float32"))
    g.save(tmp_path / "g")
    (constant,) = (tmp_path / "g" / "constants").iterdir()
    return tmp_path / "g", constant


@pytest.mark.parametrize("array,found", [
    (np.zeros((4, 4), "float64"), "float64[4,4]"),   # would run and return float64
    (np.zeros((4, 4), "int64"), "int64[4,4]"),
    (np.zeros((3, 3), "float32"), "float32[3,3]"),   # would fail later inside matmul
    (np.zeros((16,), "float32"), "float32[16]"),
])
def test_an_array_file_of_another_type_than_declared_is_refused(tmp_path, array, found):
    directory, constant = _saved(tmp_path)
    np.save(constant, array)
    with pytest.raises(ValueError, match="line 3: the constant's value is " + re.escape(found) + ", but the "
                                         r"line declares float32\[4,4\]"):
        graph.load(directory)


def test_a_declared_huge_shape_does_not_pass_for_a_small_file(tmp_path):
    directory, _ = _saved(tmp_path)
    text = (directory / "graph.txt").read_text()
    (directory / "graph.txt").write_text(text.replace("float32[4,4]", "float32[100000,100000]"))
    with pytest.raises(ValueError, match="declares float32"):
        graph.load(directory)


def test_object_arrays_are_never_unpickled(tmp_path):
    directory, constant = _saved(tmp_path)
    np.save(constant, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle=False"):
        graph.load(directory)


def test_a_file_that_is_no_npy_file_is_named(tmp_path):
    directory, constant = _saved(tmp_path)
    constant.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"constants/c\d+\.npy is not a \.npy file"):
        graph.load(directory)


@pytest.mark.parametrize("text,message", [
    ("graph {\n  %0 = constant {value=array([1.0, 2.0, 3.0], 'float32')} : float32[2,2]\n"
     "  output 'y' = %0\n}", "line 2: the constant's value is float32"),
    ("graph {\n  %0 = constant {value=3} : float32[]\n  output 'y' = %0\n}",
     "value is int64"),
    ("graph {\n  %0 = constant : float32[2]\n  output 'y' = %0\n}", "needs a value"),
    ("graph {\n  %0 = input {name='x'} : object[2]\n  output 'y' = %0\n}",
     "not a tensor dtype: 'object'"),
    ("graph {\n  %0 = input {name='x'} : str[2]\n  output 'y' = %0\n}", "not a tensor dtype"),
    ("graph {\n  %0 = input : float32[2]\n  output 'y' = %0\n}", "input node without a name"),
    ("graph {\n  %0 = parameter {name=3} : float32[2]\n  output 'y' = %0\n}",
     "parameter node without a name"),
    ("graph {\n  %0 = input {name='x'} : float32[2]\n  output 'y' = %0\n  output 'y' = %0\n}",
     "line 4: a second output named 'y'"),
])
def test_parse_refuses_lines_whose_values_or_types_do_not_fit(text, message):
    with pytest.raises(ValueError, match=message):
        graph.parse(text)


def test_parse_wants_text():
    with pytest.raises(TypeError, match="must be a str"):
        graph.parse(b"graph {\n}\n")


@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_an_npy_header_declaring_more_data_than_the_file_holds_is_refused(tmp_path, version):
    """Checked against the file size before NumPy allocates for the declared shape (which was
    a MemoryError, or a reshape error naming nothing)."""
    directory, constant = _saved(tmp_path)
    header = {"descr": "<f4", "fortran_order": False, "shape": (100000, 100000, 1000)}
    with open(constant, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header) if version == (1, 0) else \
            np.lib.format.write_array_header_2_0(f, header)
        f.write(b"\0" * 64)
    with pytest.raises(ValueError, match=re.escape(
            "declares float32[100000, 100000, 1000] (40000000000000 bytes) but holds 64 bytes")):
        graph.load(directory)


@pytest.mark.parametrize("kind", ["input", "parameter"])
def test_two_inputs_or_parameters_of_one_name_and_different_types_are_refused(kind):
    """A name binds one value (feeds and saved values are looked up by name): a second node of
    the name and another type got the first's value or none (an AttributeError deep inside a
    run)."""
    text = (f"graph {{\n  %0 = {kind} {{name='w'}} : float32[3]\n"
            f"  %1 = {kind} {{name='w'}} : float64[2]\n  output 'a' = %0\n  output 'b' = %1\n}}")
    with pytest.raises(ValueError, match=re.escape(
            f"kerasrs.graph.parse: Graph: two {kind} nodes named 'w' (%0 and %1) of different "
            "types; a name binds one value. Received: float32[3] and float64[2]")):
        graph.parse(text)


@pytest.mark.parametrize("fed,declared", [(4, 400000), (400000, 4)])
def test_a_fused_chain_of_another_size_than_its_input_is_refused(fed, declared):
    """A replay trusts the declared types (they plan its buffers and kernels): a fused kernel
    read ``declared`` elements of a ``fed``-element array, past its end or silently only its
    start."""
    text = (f"graph {{\n  %0 = input {{name='x'}} : float32[{fed}]\n"
            f"  %1 = exp(%0) : float32[{declared}]\n  %2 = add(%1, %1) : float32[{declared}]\n"
            f"  %3 = multiply(%2, %2) : float32[{declared}]\n  output 'y' = %3\n}}")
    program = graph.compile(graph.parse(text))
    with pytest.raises(ValueError, match=re.escape(f"are declared of shape [{declared}], but "
                                                   "their input %")):
        program(x=np.ones(fed, "float32"))


def test_a_parameter_bound_to_a_variable_of_another_type_is_refused():
    """An in-place update writes the declared size into the variable's memory."""
    w = kerasrs.Variable(np.ones((1000,), "float32"), name="w")
    g = graph.trace(lambda x: graph.assign(w, x * 2.0) or {"y": ops.sum(x)},
                    x=np.ones((1000,), "float32"))
    small = g.with_bindings({"w": kerasrs.Variable(np.ones((4,), "float32"), name="w")})
    with pytest.raises(ValueError, match=re.escape(
            "parameters bound to variables of another type: 'w' is float32[1000] but its "
            "variable float32[4]")):
        graph.compile(small)


def test_an_unmerged_second_parameter_of_one_name_is_refused_by_an_unoptimized_run():
    """A run fills one node per name: the other was None (an error about dtype 'object')."""
    g = graph.parse("graph {\n  %0 = parameter {name='w'} : float32[3]\n"
                    "  %1 = parameter {name='w'} : float32[3]\n  %2 = add(%0, %1) : float32[3]\n"
                    "  output 'y' = %2\n}").with_bindings(
        {"w": kerasrs.Variable(np.arange(3.0, dtype="float32"), name="w")})
    assert graph.compile(g)()["y"].numpy().tolist() == [0.0, 2.0, 4.0]  # merged by CSE
    with pytest.raises(ValueError, match="several parameter nodes share a name; merge them"):
        g.run()


def test_an_op_line_without_its_attributes_is_refused_naming_them():
    """It was an AttributeError from inside the op's forward ('Sum' object has no 'axis')."""
    g = graph.parse("graph {\n  %0 = input {name='x'} : float32[3]\n  %1 = sum(%0) : float32[]\n"
                    "  output 'y' = %1\n}")
    with pytest.raises(ValueError, match=re.escape(
            "%1 = sum(...) needs the attributes ['axis', 'keepdims']. Received: []")):
        g.run(x=np.ones(3, "float32"))


@pytest.mark.parametrize("line,message", [
    ("%1 = pick(%0) : float32[3]", "needs the attribute 'index'"),
    ("%1 = saved(%0) : float32[3]", "needs the attribute 'attr'"),
    ("%1 = saved(%0) {attr='x'} : float32[3]", "takes an op node first"),
    ("%1 = vjp(%0, %0) {needs=(True,)} : (float32[3])", "takes an op node first"),
    ("%1 = gradient(%0) : float32[3]", "takes 2 to 3 inputs"),
    ("%1 = assert_computed(%0, %0) : float32[3]", "takes 1 inputs"),
    ("%1 = pick(%0) {index=0} : float32[3]", "not a tuple"),
    ("%1 = pick(%0) {index=True} : float32[3]", "needs the attribute 'index'"),
    ("%1 = input(%0) {name='z'} : float32[3]", "takes 0 inputs"),
])
def test_a_malformed_structural_line_is_refused_naming_it(line, message):
    """These parsed, then failed inside a run with a bare KeyError or IndexError."""
    text = f"graph {{\n %0 = input {{name='x'}} : float32[3]\n {line}\n output 'y' = %0\n}}"
    with pytest.raises(ValueError, match=message) as raised:
        graph.parse(text)
    assert "%1" in str(raised.value)


def test_a_vjp_node_is_no_output():
    text = ("graph {\n %0 = input {name='x'} : float32[3]\n %1 = exp(%0) : float32[3]\n"
            " %2 = vjp(%1, %0) {needs=(True,)} : (float32[3])\n output 'y' = %2\n}")
    with pytest.raises(ValueError, match="'y' is %2, a vjp node"):
        graph.parse(text)


def test_an_op_with_its_own_make_missing_an_attribute_is_refused_naming_the_node():
    """cast's Function is made from its 'dtype': a line without it was a bare KeyError."""
    g = graph.parse("graph {\n %0 = input {name='x'} : float32[3]\n"
                    " %1 = cast(%0) : float64[3]\n output 'y' = %1\n}")
    for run in (graph.compile(g), g.run):
        with pytest.raises(ValueError, match=r"%1 = cast\(...\) needs the attribute 'dtype'"):
            run(x=np.ones(3, "float32"))
