"""CSVLogger, TerminateOnNaN, LambdaCallback, RemoteMonitor (against a local HTTP server) and
TensorBoard (scalars read back from the event files)."""

import glob
import http.server
import json
import struct
import threading
import time
import urllib.parse

import numpy as np
import pytest

import kerasrs
from kerasrs import callbacks, layers

X = np.linspace(-1, 1, 16, dtype="float32").reshape(8, 2)
Y = (X @ np.array([[1.0], [-1.0]], "float32")).astype("float32")


def _model():
    kerasrs.utils.clear_session()
    model = kerasrs.Sequential([layers.Input((2,)), layers.Dense(1, kernel_initializer="ones")])
    model.compile(kerasrs.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return model


def _fit(model, *cbs, epochs=3, **kwargs):
    return model.fit(X, Y, batch_size=4, epochs=epochs, shuffle=False, callbacks=list(cbs),
                     verbose=0, **kwargs)


# -- CSVLogger ------------------------------------------------------------------------------------
def test_csv_rows_are_flushed_at_each_epoch_and_append_keeps_one_header(tmp_path):
    path = tmp_path / "log.csv"
    seen = []
    peek = callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(path.read_text()))
    model = _model()
    h = _fit(model, callbacks.CSVLogger(path), peek, validation_data=(X, Y))
    assert [text.count("\n") for text in seen] == [2, 3, 4]  # header + finished epochs
    _fit(model, callbacks.CSVLogger(path, append=True), epochs=2)
    lines = path.read_text().splitlines()
    assert lines[0] == "epoch,loss,mae,val_loss,val_mae" and len(lines) == 6
    assert [line.split(",")[0] for line in lines[1:]] == ["0", "1", "2", "0", "1"]
    assert lines[4].endswith(",NA,NA")  # the appended run had no validation
    assert float(lines[1].split(",")[1]) == h.history["loss"][0]


@pytest.mark.parametrize("separator", [";;", "", 9])
def test_csv_separator_must_be_one_character(separator, tmp_path):
    # before: the csv module's TypeError at the first epoch end, and the file left open
    with pytest.raises(TypeError, match=r"CSVLogger: `separator` must be a single character.*"
                                        rf"separator={separator!r}"):
        callbacks.CSVLogger(tmp_path / "log.csv", separator=separator)


# -- TerminateOnNaN / LambdaCallback --------------------------------------------------------------
def test_terminate_on_nan_stops_at_the_first_nan_batch():
    model = _model()
    x = X.copy()
    x[5] = np.nan  # second batch of 4
    batches = []
    h = model.fit(x, Y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                  callbacks=[callbacks.TerminateOnNaN(), callbacks.LambdaCallback(
                      on_train_batch_end=lambda b, logs: batches.append(b))])
    assert batches == [0, 1] and len(h.history["loss"]) == 1
    assert np.isnan(h.history["loss"][0])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_terminate_on_nan_can_raise():
    x = X.copy()
    x[0] = np.inf
    with pytest.raises(RuntimeError, match="NaN or Inf loss at batch 0"):
        _model().fit(x, Y, batch_size=4, shuffle=False, verbose=0,
                     callbacks=[callbacks.TerminateOnNaN(raise_error=True)])


def test_lambda_callback_hooks_and_unknown_names():
    calls = []
    cb = callbacks.LambdaCallback(on_train_begin=lambda logs: calls.append("train_begin"),
                                  on_epoch_end=lambda e, logs: calls.append(("epoch", e)),
                                  on_test_end=lambda logs: calls.append("test_end"))
    _fit(_model(), cb, epochs=2)
    assert calls == ["train_begin", ("epoch", 0), ("epoch", 1)]
    _model().evaluate(X, Y, callbacks=[cb], verbose=0)
    assert calls[-1] == "test_end"
    assert not cb._needs_batch_hooks("train")
    with pytest.warns(UserWarning, match="`on_epoch_finish` is not a callback hook"):
        kept = callbacks.LambdaCallback(on_epoch_finish=print)  # kept, as Keras keeps it
    assert kept.on_epoch_finish is print


# -- RemoteMonitor --------------------------------------------------------------------------------
class _Recorder(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body.decode()))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Recorder.received = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


def test_remote_monitor_posts_each_epoch_as_form_and_as_json(server):
    root = f"http://127.0.0.1:{server.server_port}"
    h = _fit(_model(), callbacks.RemoteMonitor(root=root), epochs=2)
    assert len(_Recorder.received) == 2
    path, kind, body = _Recorder.received[1]
    assert path == "/publish/epoch/end/" and kind == "application/x-www-form-urlencoded"
    sent = json.loads(urllib.parse.parse_qs(body)["data"][0])
    assert sent == {"epoch": 1, "loss": h.history["loss"][1], "mae": h.history["mae"][1]}
    _fit(_model(), callbacks.RemoteMonitor(root=root, path="/p", send_as_json=True,
                                           headers={"X-Run": "7"}), epochs=1)
    path, kind, body = _Recorder.received[2]
    assert path == "/p" and kind == "application/json" and json.loads(body)["epoch"] == 0


def test_remote_monitor_warns_when_the_server_is_unreachable(server):
    port = server.server_port
    server.shutdown()
    server.server_close()
    with pytest.warns(UserWarning, match=f"could not reach the server at http://127.0.0.1:{port}"):
        _fit(_model(), callbacks.RemoteMonitor(root=f"http://127.0.0.1:{port}", timeout=5),
             epochs=1)


# -- TensorBoard ----------------------------------------------------------------------------------
def _read_scalars(folder):
    """{tag: [(step, value)]} from the event files in ``folder``, parsed with tensorboardX's
    own protobuf classes (TFRecord framing: length u64, crc u32, payload, crc u32)."""
    from tensorboardX.proto import event_pb2

    out = {}
    for path in sorted(glob.glob(f"{folder}/events.out.tfevents.*")):
        data = open(path, "rb").read()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at:at + 8])
            event = event_pb2.Event.FromString(data[at + 12:at + 12 + length])
            at += 16 + length
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.setdefault(value.tag, []).append((event.step, value.simple_value))
                else:
                    out.setdefault(value.tag, []).append((event.step, None))
    return out


def test_tensorboard_always_logs_the_learning_rate(tmp_path):
    pytest.importorskip("tensorboardX")
    _fit(_model(), callbacks.TensorBoard(tmp_path), epochs=2)
    steps, values = zip(*_read_scalars(tmp_path / "train")["epoch_learning_rate"])
    assert steps == (0, 1)
    np.testing.assert_allclose(values, [0.1, 0.1], rtol=1e-6)


def test_tensorboard_scalars_read_back(tmp_path):
    pytest.importorskip("tensorboardX")
    model = _model()
    h = _fit(model, callbacks.ReduceLROnPlateau(monitor="loss", patience=1, factor=0.5),
             callbacks.TensorBoard(tmp_path, histogram_freq=1, update_freq=1),
             validation_data=(X, Y))
    train, val = _read_scalars(tmp_path / "train"), _read_scalars(tmp_path / "validation")
    for name in ("loss", "mae", "learning_rate"):
        steps, values = zip(*train[f"epoch_{name}"])
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, h.history[name], rtol=1e-6)
    steps, values = zip(*val["epoch_loss"])
    np.testing.assert_allclose(values, h.history["val_loss"], rtol=1e-6)
    assert [step for step, _ in train["batch_loss"]] == [1, 2, 3, 4, 5, 6]
    assert len(train["sequential/dense/kernel/histogram"]) == 3  # one per epoch
    # the writers were closed by fit; the queue's feeder thread exits a moment later (the
    # kernels' thread pool, started by any earlier large enough kernel call, stays)
    def others():
        return [t for t in threading.enumerate() if t is not threading.main_thread()
                and not t.name.startswith("kerasrs-cpu")]

    deadline = time.monotonic() + 30
    while others() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not others(), threading.enumerate()


def test_files_csv_append_onto_a_file_with_other_columns_refuses(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("epoch,accuracy,loss\n0,0.5,1.0\n")
    with pytest.raises(ValueError) as info:
        _fit(_model(), callbacks.CSVLogger(path, append=True), epochs=2)
    message = str(info.value)
    assert repr(str(path)) in message and "'accuracy'" in message and "'mae'" in message
    assert path.read_text() == "epoch,accuracy,loss\n0,0.5,1.0\n"  # nothing malformed written
    # a file with this run's columns (here with another separator) is appended to
    path.write_text("epoch;loss;mae;val_loss;val_mae\n")
    _fit(_model(), callbacks.CSVLogger(path, separator=";", append=True), epochs=1)
    assert path.read_text().count("\n") == 2
