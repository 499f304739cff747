"""Training-step graphs: trace, differentiate, simplify, share, save and replay.

A `Graph` is a program of typed nodes (`kerasrs.graph.ir`): ``parameter`` (a `Variable`, updated
in place), ``input`` (fed every run), ``constant``, ``gradient`` (d target / d node, for later
nodes to use) and ops named by the registry (`register_op`). In five steps::

    g = kerasrs.graph.trace(step, x=x_batch, y=y_batch)   # run once, record every op
    g = kerasrs.graph.differentiate(g)                    # gradient nodes -> vjp nodes
    g = kerasrs.graph.optimize(g)                         # fold, simplify, CSE, dead nodes
    print(g); g.save("step"); g = kerasrs.graph.load("step")
    program = kerasrs.graph.compile(g)                    # fused kernels, planned buffers
    program(x=x_batch, y=y_batch)                         # {"loss": Tensor}; updates applied

(`compile` does the second and third steps itself.) Inside ``step``, `grad`, `assign`,
`constant` (an array or a ``.npy`` file) and `already_computed` add gradient, update, constant
and assertion nodes, and `updates_if` makes a block's updates conditional; `trace_train_step`
builds a whole training step for a model, an optimizer and a loss. `register_op` makes a
`Function` subclass of another package traceable, differentiable and serializable.
"""

from kerasrs.graph import builtin_ops, files, ir, program, text
from kerasrs.graph.backward import differentiate  # noqa: F401
from kerasrs.graph.files import load  # noqa: F401
from kerasrs.graph.ir import Builder, Graph, Node, TensorType  # noqa: F401
from kerasrs.graph.passes import (cse, fold_constants, optimize, remove_dead,  # noqa: F401
                                  simplify)
from kerasrs.graph.program import Program, compile  # noqa: F401,A004
from kerasrs.graph.registry import OpDef, register_op  # noqa: F401
from kerasrs.graph.text import parse  # noqa: F401
from kerasrs.graph.tracing import (TraceError, Tracer, already_computed, assign,  # noqa: F401
                                   constant, grad, trace, updates_if)
from kerasrs.graph.train_step import (UpdateRule, hyper_feeds, register_update_rule,  # noqa: F401
                                      trace_train_step)


builtin_ops.register_all()
# Graph's conveniences live where their machinery is (`ir` may not import those modules):
ir.Graph.__str__ = text.format_graph
ir.Graph.save = files.save
ir.Graph.run = program.run
