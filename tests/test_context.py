"""Per-call state (`kerasrs.context`) is per thread and per asyncio task: the training flag, name
scopes, padded rows and tapes of one never leak into another."""

import asyncio
import threading

import numpy as np

import kerasrs
from kerasrs import context, layers
from kerasrs.layers import naming, padding


class _Probe(layers.Layer):
    """Records the ``training`` value each call receives (inherited when the caller gives None)."""

    def __init__(self, seen, wait=None):
        super().__init__()
        self.seen, self.wait = seen, wait

    def call(self, inputs, training=None):
        if self.wait is not None:
            self.wait()  # the other thread enters its own call meanwhile
        self.seen.append(training)
        return inputs


class _Outer(layers.Layer):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def call(self, inputs, training=None):
        return self.inner(inputs)  # training=None: inherits this call's value


def _in_threads(*targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_two_threads_keep_their_own_training_flag():
    both_inside = threading.Barrier(2)
    seen = {True: [], False: []}
    x = np.ones((1, 2), "float32")

    def run(flag):
        _Outer(_Probe(seen[flag], wait=both_inside.wait))(x, training=flag)

    _in_threads(lambda: run(True), lambda: run(False))
    assert seen == {True: [True], False: [False]}


def test_two_threads_keep_their_own_name_scopes():
    both_open = threading.Barrier(2)
    paths = {}

    def run(scope):
        with naming.name_scope(scope):
            both_open.wait()  # both scopes are open now
            layer = layers.Dense(1, name="d")
            layer.build((None, 2))
            paths[scope] = [w.path for w in layer.weights]
            both_open.wait()

    _in_threads(lambda: run("a"), lambda: run("b"))
    assert paths == {"a": ["a/d/kernel", "a/d/bias"], "b": ["b/d/kernel", "b/d/bias"]}
    assert context.layer_call.get() == (context.OUTSIDE, ())


def test_two_tasks_keep_their_own_state():
    x = np.ones((1, 2), "float32")
    v = kerasrs.Variable([2.0])

    async def task(flag, scope, rows):
        seen = []
        context.layer_call.set((flag, ()))  # as inside a layer call with training=flag
        with naming.name_scope(scope), padding.real_rows(rows, 8), \
                kerasrs.GradientTape() as tape:
            await asyncio.sleep(0)  # the other task opens its own state here
            _Probe(seen)(x)
            y = v * v
            await asyncio.sleep(0)
            state = (seen[0], naming.variable_path("w"), padding.current(), len(tape._records))
        return state, float(tape.gradient(y, v).numpy()[0])

    async def main():
        return await asyncio.gather(task(True, "a", 3), task(False, "b", 5))

    results = asyncio.run(main())
    assert results == [((True, "a/w", (3, 8), 1), 4.0), ((False, "b/w", (5, 8), 1), 4.0)]
    assert context.layer_call.get() == (context.OUTSIDE, ()) and context.tapes.get() == ()


def test_state_is_restored_after_a_failing_call():
    class Failing(layers.Layer):
        def call(self, inputs, training=None):
            raise RuntimeError("boom")

    try:
        Failing()(np.ones((1, 2), "float32"), training=True)
    except RuntimeError:
        pass
    assert context.layer_call.get() == (context.OUTSIDE, ()) and context.autocast.get() is None
