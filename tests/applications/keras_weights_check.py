"""Real Keras builds an application, gives it random weights, saves them and predicts: the files
`test_keras_weights.py` loads into kerasrs. Needs Keras 3 (any backend), not kerasrs.

    KERAS_BACKEND=torch /work/refvenv/bin/python tests/applications/keras_weights_check.py \
        OUT_DIR ResNet50 MobileNetV2 EfficientNetB0

For each application (weights=None, ``classifier_activation=None`` so that logits are
compared, input 64x64) it writes into OUT_DIR:

* ``<App>.h5``: the weights in the layout of Keras's published ImageNet files (a Keras 2
  weights file: ``layer_names`` and per-layer ``weight_names``), written by Keras's own
  legacy writer;
* ``<App>.weights.h5``: the Keras 3 weights file (``model.save_weights``), except for
  ResNet50, whose 100 MB would be written and read a second time;
* ``<App>.npz``: the input images (``x``, already preprocessed) and Keras's predictions
  (``y``).

The weights are Keras's seeded initial kernels, with every bias, BatchNormalization parameter
and statistic and Normalization statistic drawn at random (Keras leaves those at 0 or 1, which
would hide a swapped or skipped array).
"""

import os
import sys

import numpy as np

import keras
from keras.src.legacy.saving import legacy_h5_format

SIZE = 64


def randomize(model, rng):
    for layer in model.layers:
        values = []
        for w in layer.weights:
            v = keras.ops.convert_to_numpy(w.value).astype("float64")
            name = w.path.rsplit("/", 1)[-1]
            if name in ("moving_variance", "variance"):
                v = rng.uniform(0.5, 1.5, v.shape) * (1.0 if name == "moving_variance" else 900)
            elif name in ("moving_mean", "mean"):
                v = rng.normal(0, 0.1 if name == "moving_mean" else 30, v.shape)
            elif name == "gamma":
                v = rng.uniform(0.8, 1.2, v.shape)
            elif name in ("beta", "bias"):
                v = rng.normal(0, 0.05, v.shape)
            elif name == "count":
                v = np.full(v.shape, 1000.0)
            values.append(v.astype(w.dtype))
        if values:
            layer.set_weights(values)


def main(out, names):
    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(0)
    for name in names:
        keras.utils.clear_session()
        model = getattr(keras.applications, name)(weights=None, classifier_activation=None,
                                                  input_shape=(SIZE, SIZE, 3))
        randomize(model, rng)
        images = rng.uniform(0, 255, (2, SIZE, SIZE, 3)).astype("float32")
        family = {"ResNet50": "resnet", "MobileNetV2": "mobilenet_v2",
                  "EfficientNetB0": "efficientnet"}.get(name)
        x = getattr(keras.applications, family).preprocess_input(images.copy()) if family \
            else images
        y = keras.ops.convert_to_numpy(model.predict(x, verbose=0))
        import h5py

        with h5py.File(os.path.join(out, f"{name}.h5"), "w") as f:
            legacy_h5_format.save_weights_to_hdf5_group(f, model)
        if name != "ResNet50":
            model.save_weights(os.path.join(out, f"{name}.weights.h5"))
        np.savez(os.path.join(out, f"{name}.npz"), x=np.asarray(x), y=y)
        print("WROTE", name, y.shape, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
