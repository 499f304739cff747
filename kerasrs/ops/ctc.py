"""Connectionist temporal classification: the CTC loss (forward-backward in log space) and
greedy / beam-search decoding (Graves et al. 2006, "Connectionist Temporal Classification",
eq. 5-16). The recursions loop over time and are vectorized over batch and label positions."""

import numpy as np

from kerasrs.autodiff import Function, convert_to_tensor
from kerasrs.backend.dtypes import INDEX, result_dtype
from kerasrs.ops.activations import log_softmax
from kerasrs.ops.core import constant
from kerasrs.ops.dispatch import op


def _lse(*xs):
    m = np.maximum.reduce(xs)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(sum(np.exp(x - safe) for x in xs))


class CTCLoss(Function):
    """Per-sample ``-log p(labels | x)`` from log-probabilities (batch, time, classes)."""

    def __init__(self, labels, label_len, out_len, blank):
        self.labels, self.label_len, self.out_len, self.blank = labels, label_len, out_len, blank

    def forward(self, lp_arr):
        lp = self.backend.to_numpy(lp_arr).astype("float64")
        b, t_max, _ = lp.shape
        s_max = 2 * self.labels.shape[1] + 1
        ext = np.full((b, s_max), self.blank, dtype="int64")
        ext[:, 1::2] = self.labels
        s_len = 2 * self.label_len + 1
        pos = np.arange(s_max)
        valid_s = pos[None, :] < s_len[:, None]
        # skipping s-2 is allowed onto a label that differs from the label two back
        skip = np.zeros((b, s_max), dtype=bool)
        skip[:, 2:] = (ext[:, 2:] != self.blank) & (ext[:, 2:] != ext[:, :-2])
        emit = np.take_along_axis(lp, np.broadcast_to(ext[:, None, :], (b, t_max, s_max)),
                                  axis=2)  # (b, t, s)
        neg = -np.inf
        alpha = np.full((t_max, b, s_max), neg)
        alpha[0, :, 0] = emit[:, 0, 0]
        alpha[0, :, 1] = np.where(s_len > 1, emit[:, 0, 1], neg)
        for t in range(1, t_max):
            a = alpha[t - 1]
            a1 = np.concatenate([np.full((b, 1), neg), a[:, :-1]], 1)
            a2 = np.where(skip, np.concatenate([np.full((b, 2), neg), a[:, :-2]], 1), neg)
            alpha[t] = np.where(valid_s, _lse(a, a1, a2) + emit[:, t], neg)
        last = self.out_len - 1
        at_end = alpha[last, np.arange(b)]
        end1 = np.take_along_axis(at_end, (s_len - 1)[:, None], 1)[:, 0]
        end2 = np.where(s_len > 1, np.take_along_axis(at_end, np.maximum(s_len - 2, 0)[:, None],
                                                      1)[:, 0], neg)
        logp = _lse(end1, end2)
        beta = np.full((t_max, b, s_max), neg)
        init = np.full((b, s_max), neg)
        init[np.arange(b), s_len - 1] = emit[np.arange(b), last, s_len - 1]
        has2 = s_len > 1
        init[np.arange(b)[has2], (s_len - 2)[has2]] = emit[np.arange(b), last, s_len - 2][has2]
        for t in range(t_max - 1, -1, -1):
            if t == t_max - 1:
                nxt = np.full((b, s_max), neg)
            else:
                nb = beta[t + 1]
                n1 = np.concatenate([nb[:, 1:], np.full((b, 1), neg)], 1)
                skip_next = np.concatenate([skip[:, 2:], np.zeros((b, 2), bool)], 1)
                n2 = np.where(skip_next, np.concatenate([nb[:, 2:], np.full((b, 2), neg)], 1), neg)
                nxt = np.where(valid_s, _lse(nb, n1, n2) + emit[:, t], neg)
            beta[t] = np.where((t == last)[:, None], init, np.where((t < last)[:, None], nxt, neg))
        gamma = alpha + beta - emit.transpose(1, 0, 2)  # log P(paths through s at t)
        occ = np.exp(gamma - logp[None, :, None])  # (t, b, s)
        grad = np.zeros_like(lp)
        bt = np.arange(b)[:, None].repeat(s_max, 1)
        for t in range(t_max):
            np.add.at(grad[:, t, :], (bt, ext), occ[t])
        self.grad, self.in_dtype = -grad, lp_arr.dtype
        # Keras: the loss of half-precision logits is float32 (float_type of float32)
        return self.backend.asarray((-logp).astype(result_dtype(lp_arr.dtype, "float32")))

    def backward(self, gy):
        g = self.backend.asarray(self.grad.astype(self.in_dtype))
        return (g * gy[:, None, None].astype(self.in_dtype),)


@op
def ctc_loss(target, output, target_length, output_length, mask_index=0):
    """CTC loss per sample.

    Args:
        target: int labels (batch, max_label_len); entries past ``target_length`` are ignored.
        output: logits (batch, time, classes) (log-softmax is applied here).
        target_length, output_length: int (batch,) lengths.
        mask_index: the blank class.

    Returns:
        float Tensor (batch,): ``-log p(target | output)``; ``inf`` where no alignment exists.
        Differentiable in ``output``.
    """
    out = convert_to_tensor(output)
    labels = np.asarray(convert_to_tensor(target).numpy()).astype("int64")
    label_len = np.asarray(convert_to_tensor(target_length).numpy()).astype("int64").reshape(-1)
    out_len = np.asarray(convert_to_tensor(output_length).numpy()).astype("int64").reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        return CTCLoss(labels, label_len, out_len, mask_index).apply(log_softmax(out, axis=-1))


@op
def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1,
               merge_repeated=True, mask_index=0):
    """Decode CTC outputs (batch, time, classes): "greedy" (best class per step, repeats merged,
    blanks removed) or "beam_search" (prefix beam search, Hannun et al. 2014).

    Returns:
        ``(decoded, log_probabilities)``: decoded int Tensor (top_paths, batch, time) padded
        with -1; scores (batch, top_paths) (greedy: the negative sum of best log-probs).
    """
    x = convert_to_tensor(inputs)
    lp = np.asarray(log_softmax(x, axis=-1).numpy(), dtype="float64")
    lens = np.asarray(convert_to_tensor(sequence_lengths).numpy()).astype("int64").reshape(-1)
    b, t_max, _ = lp.shape
    if strategy == "greedy":
        best = lp.argmax(-1)
        score = -np.where(np.arange(t_max)[None] < lens[:, None], lp.max(-1), 0.0).sum(1)
        keep = np.arange(t_max)[None] < lens[:, None]
        keep &= best != mask_index
        if merge_repeated:
            keep[:, 1:] &= best[:, 1:] != best[:, :-1]
        out = np.full((1, b, t_max), -1, dtype="int64")
        for i in range(b):
            seq = best[i][keep[i]]
            out[0, i, :len(seq)] = seq
        return constant(x.backend.asarray(out.astype(INDEX)), x.backend), constant(
            x.backend.asarray(score[:, None]), x.backend)
    if strategy != "beam_search":
        raise ValueError(f"ctc_decode: Invalid strategy; `strategy` must be 'greedy' or "
                         f"'beam_search'. Received: "
                         f"strategy={strategy!r}")
    out = np.full((top_paths, b, t_max), -1, dtype="int64")
    scores = np.zeros((b, top_paths))
    for i in range(b):
        for k, (seq, score) in enumerate(_prefix_beam(lp[i, :lens[i]], beam_width, mask_index,
                                                      top_paths)):
            out[k, i, :len(seq)] = seq
            scores[i, k] = score
    return constant(x.backend.asarray(out.astype(INDEX)), x.backend), constant(
        x.backend.asarray(scores), x.backend)


def _prefix_beam(lp, beam_width, blank, top_paths):
    """Prefix beam search over one sequence's log-probs (time, classes)."""
    beams = {(): (0.0, -np.inf)}  # prefix -> (log p ending in blank, log p ending in non-blank)
    for row in lp:
        nxt = {}

        def add(prefix, pb, pnb):
            ob, onb = nxt.get(prefix, (-np.inf, -np.inf))
            nxt[prefix] = (np.logaddexp(ob, pb), np.logaddexp(onb, pnb))

        for prefix, (pb, pnb) in beams.items():
            total = np.logaddexp(pb, pnb)
            add(prefix, total + row[blank], -np.inf)
            for c in range(len(row)):
                if c == blank:
                    continue
                new = prefix + (c,)
                if prefix and prefix[-1] == c:
                    add(new, -np.inf, pb + row[c])
                    add(prefix, -np.inf, pnb + row[c])
                else:
                    add(new, -np.inf, total + row[c])
        beams = dict(sorted(nxt.items(), key=lambda kv: -np.logaddexp(*kv[1]))[:beam_width])
    ranked = sorted(beams.items(), key=lambda kv: -np.logaddexp(*kv[1]))[:top_paths]
    return [(list(p), float(np.logaddexp(*s))) for p, s in ranked]
