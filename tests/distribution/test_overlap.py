"""The gradient allreduce overlaps backward for real: a bucket started during backward finishes
before backward ends (MPI advances it only inside MPI calls, so this needs the reducer's
progress thread), as `GradientReducer.last_step` records."""

from mpi_launch import needs_mpi, snippet


@needs_mpi
def test_first_bucket_finishes_while_backward_still_runs():
    # The first Dense layer's weight gradient (a 2048 x 256 x 1024 GEMM, ~10 ms on one thread)
    # is the last work of backward; the bucket of the two upper layers starts before it.
    code = """
dist = kerasrs.distribution.DataParallel(bucket_size_mb=0.2, overlap=True)
kerasrs.distribution.set_distribution(dist)
steps = []

class Stamps(kerasrs.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        steps.append(dict(dist._reducer.last_step))

model = kerasrs.Sequential([kerasrs.Input((2048,)), kerasrs.layers.Dense(1024, activation="relu"),
                            kerasrs.layers.Dense(64, activation="relu"), kerasrs.layers.Dense(1)])
model.compile("sgd", "mse")
x = np.random.default_rng(0).normal(size=(4096, 2048)).astype("float32")
model.fit(x, x[:, :1], batch_size=512, epochs=1, shuffle=False, verbose=0, callbacks=[Stamps()])
say(len(dist._reducer.buckets), sum(s["started"][0] < s["backward_end"] for s in steps),
    sum(s["done_in_backward"][0] for s in steps), len(steps))
"""
    for line in snippet(code, ranks=2):
        buckets, started_early, finished_early, steps = map(int, line.split())
        assert buckets == 2 and steps == 8
        assert started_early == steps, line  # every step: the first bucket starts in backward
        # and finishes there too (a busy machine may delay a few steps' polls)
        assert finished_early >= steps // 2, line
