"""`RemoteMonitor`: post each epoch's logs to a server, with the standard library only."""

import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from kerasrs.callbacks.callback import Callback

__all__ = ["RemoteMonitor"]


class RemoteMonitor(Callback):
    """At each epoch end, send an HTTP POST with ``{"epoch": epoch, **logs}`` as JSON.

    By default the JSON travels as the form field ``field`` (``data=<json>``, form-encoded), as
    Keras sends it; with ``send_as_json=True`` it is the request body
    (``Content-Type: application/json``). A server that cannot be reached gives a warning, not
    an error, so training goes on.

    Args:
        root: the server's root URL. Defaults to "http://localhost:9000".
        path: the path appended to ``root``. Defaults to "/publish/epoch/end/".
        field: the form field holding the JSON. Defaults to "data".
        headers: dict of extra HTTP headers, or None.
        send_as_json: send the JSON itself as the body.
        timeout: seconds to wait for the server (not a Keras argument; Keras waits forever).
    """

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False, timeout=10.0):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json, self.timeout = headers, send_as_json, timeout

    def on_epoch_end(self, epoch, logs=None):
        payload = {"epoch": epoch}
        for key, value in (logs or {}).items():
            payload[key] = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        text = json.dumps(payload)
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = text.encode("utf-8")
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: text}).encode("ascii")
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=body, headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                response.read()
        except (urllib.error.URLError, OSError, ValueError) as e:
            warnings.warn(f"RemoteMonitor: could not reach the server at {self.root} "
                          f"({e}).", stacklevel=2)
