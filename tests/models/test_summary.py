"""model.summary(): the Keras-style table and totals."""

import kerasrs
from kerasrs import layers


def _lines(model, **kwargs):
    out = []
    model.summary(print_fn=out.append, **kwargs)
    return out


def test_sequential_summary_rows_and_totals():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((784,)), layers.Dense(64, activation="relu"),
                                layers.Dropout(0.2), layers.Dense(10, activation="softmax")])
    lines = _lines(model)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "sequential"'
    assert "Layer (type)" in lines[2] and "Output Shape" in lines[2] and "Param #" in lines[2]
    row = next(ln for ln in lines if "dense (Dense)" in ln)
    assert "(None, 64)" in row and row.rstrip("│ ").endswith("50,240")
    assert "dropout (Dropout)" in text and "dense_1 (Dense)" in text and "Connected to" not in text
    assert " Total params: 50,890 (198.79 KB)" in lines
    assert " Trainable params: 50,890 (198.79 KB)" in lines
    assert " Non-trainable params: 0 (0.00 B)" in lines
    assert all(len(ln) == len(lines[1]) for ln in lines[1:-3])  # a rectangular table


def test_functional_summary_has_connected_to_and_frozen_counts():
    kerasrs.utils.clear_session()
    a, b = layers.Input((3,), name="a"), layers.Input((2,), name="b")
    cat = layers.Concatenate()([a, b])
    model = kerasrs.Model([a, b], layers.Dense(4, name="head")(cat))
    model.get_layer("head").trainable = False
    lines = _lines(model, show_trainable=True)
    text = "\n".join(lines)
    assert "Connected to" in text and "a (InputLayer)" in text
    cat_rows = [i for i, ln in enumerate(lines) if "concatenate (Concatenate)" in ln]
    assert "a[0][0]" in lines[cat_rows[0]] and "b[0][0]" in lines[cat_rows[0] + 1]
    assert "concatenate[0][0]" in text
    assert " Trainable params: 0 (0.00 B)" in lines
    assert " Non-trainable params: 24 (96.00 B)" in lines


def test_summary_of_unbuilt_and_subclassed_models():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Dense(2)])
    text = "\n".join(_lines(model))
    assert "0 (unbuilt)" in text and "unbuilt" in text.splitlines()[-1]
    model.build((None, 3))
    model.compile("adam", "mse")
    model.fit([[1.0, 2.0, 3.0]], [[0.0, 1.0]], verbose=0)
    assert any(ln.startswith(" Optimizer params: 18 ") for ln in _lines(model))
