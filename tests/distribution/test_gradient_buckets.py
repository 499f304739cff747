"""The pieces of data parallelism that need no MPI: the tape's gradient-ready callback and the
bucketed flat-buffer reduction (with a stand-in transport)."""

import numpy as np

import kerasrs
from kerasrs import autodiff, layers
from kerasrs.distribution import reducer


def _mlp_and_loss():
    kerasrs.utils.set_random_seed(0)
    model = kerasrs.Sequential([kerasrs.Input((5,)), layers.Dense(4, activation="tanh"),
                                layers.Dense(3)])
    x = np.random.default_rng(1).normal(size=(6, 5)).astype("float32")
    tape = autodiff.GradientTape()
    with tape:
        loss = kerasrs.ops.mean(kerasrs.ops.square(model(x)))
    return model, tape, loss


def test_gradient_ready_callback_reports_each_final_gradient_once_last_layer_first():
    model, tape, loss = _mlp_and_loss()
    seen = []
    tape._on_gradient_ready = lambda source, g: seen.append((source, g.copy()))
    grads = tape.gradient(loss, model.trainable_weights)
    first, second = model.layers
    assert [id(s) for s, _ in seen[:2]] in ([id(second.kernel), id(second.bias)],
                                            [id(second.bias), id(second.kernel)])
    assert sorted(id(s) for s, _ in seen) == sorted(id(v) for v in model.trainable_weights)
    by_id = {id(s): g for s, g in seen}
    for v, g in zip(model.trainable_weights, grads):
        np.testing.assert_array_equal(by_id[id(v)], g.numpy())
    assert id(first.kernel) in by_id


def test_gradient_ready_waits_for_every_use_of_a_shared_weight():
    w = kerasrs.Variable(np.array([1.0, 2.0]))
    seen = []
    with autodiff.GradientTape() as tape:
        h = w * 3.0
        loss = kerasrs.ops.sum(h * w)  # w used twice: d/dw sum(3 w^2) = 6 w
    tape._on_gradient_ready = lambda source, g: seen.append(g.copy())
    tape.gradient(loss, w)
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [6.0, 12.0])


class _Copies:
    """A transport for ``processes`` identical processes: the sum is the local value times
    ``processes``. Records how many gradients were filled when each bucket started."""

    def __init__(self, processes, owner=None):
        self.processes, self.owner, self.started = processes, owner, []

    def start(self, array):
        self.started.append(len(self.owner._filled))
        array *= self.processes

    def progress(self, requests):
        pass

    def wait_all(self, requests):
        pass


def test_buckets_start_during_backward_and_give_the_mean_gradient():
    model, tape, loss = _mlp_and_loss()
    variables = model.trainable_weights
    reference_tape = autodiff.GradientTape(persistent=True)
    x = np.random.default_rng(1).normal(size=(6, 5)).astype("float32")
    with reference_tape:
        reference_loss = kerasrs.ops.mean(kerasrs.ops.square(model(x)))
    expected = [g.numpy() for g in reference_tape.gradient(reference_loss, variables)]

    transport = _Copies(3)
    red = reducer.GradientReducer(transport, variables, bucket_bytes=1, overlap=True)
    transport.owner = red
    grads = red.gradients(tape, loss, share=1 / 3)
    # one bucket per variable, in backward order; each starts once its gradient is ready. A
    # Dense layer is one fused op, so its kernel and bias gradients are ready together.
    assert len(red.buckets) == 4 and transport.started == [2, 2, 4, 4]
    for g, e in zip(grads, expected):  # 3 copies of g / 3 is g again
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-6)


def test_without_overlap_one_allreduce_covers_the_whole_buffer():
    model, tape, loss = _mlp_and_loss()
    transport = _Copies(2)
    red = reducer.GradientReducer(transport, model.trainable_weights, bucket_bytes=1,
                                  overlap=False)
    transport.owner = red
    red.gradients(tape, loss, share=1 / 2)
    assert transport.started == [4]  # after all four gradients, once
