"""Recurrent layers: cells, the generic `RNN`, SimpleRNN/LSTM/GRU, Bidirectional, TimeDistributed.

Re-exported by `kerasrs.layers`.
"""

from kerasrs.layers.recurrent.base_rnn import RNN
from kerasrs.layers.recurrent.bidirectional import Bidirectional
from kerasrs.layers.recurrent.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from kerasrs.layers.recurrent.cells import GRUCell, LSTMCell, SimpleRNNCell, StackedRNNCells
from kerasrs.layers.recurrent.layers import GRU, LSTM, SimpleRNN
from kerasrs.layers.recurrent.time_distributed import TimeDistributed

__all__ = ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",
           "RNN", "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell",
           "StackedRNNCells", "Bidirectional", "TimeDistributed"]
