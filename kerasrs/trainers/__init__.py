"""Training: what `Model` gets from `Trainer` (compile, fit, evaluate, predict) and the pieces
behind it, below the models and above the layers, callbacks and distribution.

* `trainer`: the `Trainer` mixin (compile, metrics, the train/test/predict steps, the entry
  points);
* `run_state`: `RunState`, one fit/evaluate/predict run, and the checks of fit's arguments;
* `loops`: the loops that walk a `RunState`;
* `epoch_iterator`: data adapters (arrays, `PyDataset`, generators) and epochs of batches;
* `data_adapter`: array data (checks, batches, splits, class weights, step data packing);
* `compile_utils`: compiled losses and metrics, the loss mean, logs;
* `input_checks`: checks of the values in the data; `interrupts`: Ctrl-C during fit.
"""

from kerasrs.trainers.trainer import Trainer  # noqa: F401
