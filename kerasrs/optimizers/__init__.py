"""Optimizers with Keras 3's names, defaults and update rules, plus `get`/`serialize`/`deserialize`.

Every optimizer updates its variables in place (no tape recording) and keeps its state in
non-trainable `kerasrs.Variable`s with Keras-style paths (``adam/iteration``,
``adam/sequential_dense_kernel_momentum``), listed by ``optimizer.variables``.
"""

from kerasrs import registry
from kerasrs.optimizers import graph_rules, schedules, serialization  # noqa: F401 (rules)
from kerasrs.optimizers.adadelta import Adadelta
from kerasrs.optimizers.adafactor import Adafactor
from kerasrs.optimizers.adagrad import Adagrad
from kerasrs.optimizers.adam import Adam, AdamW
from kerasrs.optimizers.adamax import Adamax
from kerasrs.optimizers.base import Optimizer
from kerasrs.optimizers.ftrl import Ftrl
from kerasrs.optimizers.lamb import Lamb
from kerasrs.optimizers.lion import Lion
from kerasrs.optimizers.loss_scale_optimizer import LossScaleOptimizer
from kerasrs.optimizers.muon import Muon
from kerasrs.optimizers.nadam import Nadam
from kerasrs.optimizers.rmsprop import RMSprop
from kerasrs.optimizers.routing import MultiOptimizer, OptimizerMap
from kerasrs.optimizers.schedule_free_adamw import ScheduleFreeAdamW
from kerasrs.optimizers.serialization import deserialize, get, serialize
from kerasrs.optimizers.sgd import SGD

ALL_OBJECTS = (SGD, RMSprop, Adam, AdamW, Adagrad, Adadelta, Adamax, Nadam, Lion, Ftrl,
               Adafactor, Lamb, Muon, ScheduleFreeAdamW)
serialization.BY_NAME.update({cls.__name__.lower(): cls for cls in ALL_OBJECTS})
serialization.WRAPPERS.update(lossscaleoptimizer=LossScaleOptimizer, multioptimizer=MultiOptimizer)
registry.register_kind(Optimizer, serialize)

__all__ = ["Optimizer", "SGD", "RMSprop", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax",
           "Nadam", "Lion", "Ftrl", "Adafactor", "Lamb", "Muon", "ScheduleFreeAdamW", "schedules",
           "MultiOptimizer", "LossScaleOptimizer", "OptimizerMap", "get", "serialize",
           "deserialize"]
