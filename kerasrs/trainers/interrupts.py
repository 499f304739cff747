"""`DeferredInterrupt`: during ``fit``, Ctrl-C stops training after the current batch."""

import signal
import threading


class DeferredInterrupt:
    """From creation until `restore`, the first SIGINT (Ctrl-C) only sets ``requested``, so the
    loop can stop between batches with consistent weights; a second one interrupts at once.

    The handler is installed only in the main thread and only over Python's default handler
    (an application's own handler is left alone); otherwise Ctrl-C raises KeyboardInterrupt
    as usual and the loop's ``except`` handles it. `restore` puts the previous handler back.
    """

    def __init__(self):
        self.requested = False
        self._installed = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if self._installed:
            signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum, frame):
        self.requested = True
        self.restore()  # a second Ctrl-C interrupts at once

    def restore(self):
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self._installed = False
