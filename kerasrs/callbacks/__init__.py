"""Callbacks: hooks into fit/evaluate/predict, with Keras's names.

`Callback` is the base class, `CallbackList` runs several, `History` records the epoch logs
(``fit`` returns it) and `ProgbarLogger` shows progress; each other callback has a module of its
own, imported here.
"""

from kerasrs.callbacks.backup_and_restore import BackupAndRestore
from kerasrs.callbacks.callback import Callback
from kerasrs.callbacks.callback_list import CallbackList
from kerasrs.callbacks.csv_logger import CSVLogger
from kerasrs.callbacks.early_stopping import EarlyStopping
from kerasrs.callbacks.history import History
from kerasrs.callbacks.lambda_callback import LambdaCallback
from kerasrs.callbacks.learning_rate_scheduler import LearningRateScheduler
from kerasrs.callbacks.model_checkpoint import ModelCheckpoint
from kerasrs.callbacks.progbar_logger import ProgbarLogger
from kerasrs.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from kerasrs.callbacks.remote_monitor import RemoteMonitor
from kerasrs.callbacks.swap_ema_weights import SwapEMAWeights
from kerasrs.callbacks.tensorboard import TensorBoard
from kerasrs.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = ["BackupAndRestore", "CSVLogger", "Callback", "CallbackList", "EarlyStopping", "History",
           "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger",
           "ReduceLROnPlateau", "RemoteMonitor", "SwapEMAWeights", "TensorBoard",
           "TerminateOnNaN"]
