"""`TensorBoard`: write the logs as TensorBoard event files, through ``tensorboardX``."""

import os

from kerasrs.callbacks.callback import Callback

__all__ = ["TensorBoard"]


class TensorBoard(Callback):
    """Write scalars (and optionally weight histograms) that ``tensorboard --logdir`` shows.

    Uses Keras 3's layout: training values go to ``<log_dir>/train`` and validation values to
    ``<log_dir>/validation``, tagged ``epoch_<name>`` at step ``epoch`` (so ``loss`` and
    ``val_loss`` draw as two runs of one ``epoch_loss`` chart); the optimizer's current
    learning rate is written as ``epoch_learning_rate`` every epoch. With an integer
    ``update_freq`` the running training values are also written every that many batches as
    ``batch_<name>`` at the global batch count. The writer is tensorboardX (``pip install
    kerasrs[tensorboard]``), imported when ``fit`` starts; its writers are closed at the end
    of ``fit``.

    Args:
        log_dir: folder of the event files. Defaults to "logs".
        histogram_freq: every that many epochs, write a histogram of each weight, tagged
            ``<weight path>/histogram`` (``dense/kernel/histogram``); 0 writes none.
        write_graph: accepted for Keras compatibility; kerasrs has no graph to write (Keras 3
            writes one only with the TensorFlow backend).
        write_images, write_steps_per_second, profile_batch, embeddings_freq,
            embeddings_metadata: accepted for Keras compatibility; not written.
        update_freq: "epoch" or an int (batches), see above.

    Raises:
        ImportError: at the start of ``fit`` if tensorboardX is not installed, saying how to
            install it.
        ValueError: for a bad ``update_freq`` or ``histogram_freq``.
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool) or
                                       not isinstance(update_freq, int) or update_freq <= 0):
            raise ValueError("TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"int. Received: update_freq={update_freq!r}")
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, int) or \
                histogram_freq < 0:
            raise ValueError("TensorBoard: histogram_freq must be an int >= 0. Received: "
                             f"histogram_freq={histogram_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq, self.write_graph, self.update_freq = histogram_freq, write_graph, \
            update_freq
        self._writers = {}
        self._train_step = 0

    def _writer(self, name):
        writer = self._writers.get(name)
        if writer is None:
            try:
                import tensorboardX
            except ImportError as e:
                raise ImportError("TensorBoard needs the tensorboardX package: pip install "
                                  "tensorboardX (or kerasrs[tensorboard]).") from e
            writer = tensorboardX.SummaryWriter(os.path.join(self.log_dir, name))
            self._writers[name] = writer
        return writer

    def on_train_begin(self, logs=None):
        self._train_step = 0
        self._writer("train")

    def _needs_batch_hooks(self, mode):
        return mode == "train" and self.update_freq != "epoch"

    def on_train_batch_end(self, batch, logs=None):
        self._train_step += 1
        if self.update_freq == "epoch" or self._train_step % self.update_freq:
            return
        writer = self._writer("train")
        for name, value in _scalars(logs).items():
            writer.add_scalar(f"batch_{name}", value, self._train_step)

    def on_epoch_end(self, epoch, logs=None):
        scalars = _scalars(logs)
        train = {k: v for k, v in scalars.items() if not k.startswith("val_")}
        rate = getattr(getattr(self.model, "optimizer", None), "learning_rate", None)
        if rate is not None:  # Keras logs the optimizer's current rate with every epoch
            train["learning_rate"] = float(getattr(rate, "numpy", lambda: rate)())
        val = {k[4:]: v for k, v in scalars.items() if k.startswith("val_")}
        for run, values in (("train", train), ("validation", val)):
            if values:
                writer = self._writer(run)
                for name, value in values.items():
                    writer.add_scalar(f"epoch_{name}", value, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            writer = self._writer("train")
            for weight in self.model.weights:
                path = (getattr(weight, "path", None) or weight.name).replace(":", "_")
                writer.add_histogram(f"{path}/histogram", weight.numpy(), epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}


def _scalars(logs):
    out = {}
    for key, value in (logs or {}).items():
        try:
            out[key] = float(value)
        except (TypeError, ValueError):
            continue
    return out
