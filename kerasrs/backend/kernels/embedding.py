"""The gradient of an embedding table, a scatter-add over repeated ids: the NumPy twin and the
CUDA launcher of ``embedding.cu`` (on the CPU ``np.add.at`` is the kernel)."""

import numpy as np

from kerasrs.backend.kernels import cuda
from kerasrs.backend.kernels.cuda import check, float_type, fusable

CUDA = cuda.each_float("embedding_grad")


class Twin:
    """The reference version (a method of `kerasrs.backend.base.Backend`)."""

    def embedding_grad(self, indices, gy, input_dim):
        """Gradient of an embedding table: ``out[indices[i]] += gy[i]`` summed over repeats.

        Args: indices int (...); gy ``indices.shape + (dim,)``; input_dim rows of the table.
        Returns: (input_dim, dim) in ``gy``'s dtype. Ids outside ``[0, input_dim)`` add nothing.
        """
        xp = self.xp
        dim = gy.shape[-1]
        flat = indices.reshape(-1)
        rows = gy.reshape(-1, dim)
        valid = (flat >= 0) & (flat < input_dim)
        out = xp.zeros((input_dim, dim), dtype=gy.dtype)
        self.scatter_add(out, flat[valid], rows[valid])
        return out


class Launch:
    """The launcher of ``embedding.cu`` (a method of `kerasrs.backend.kernels.Launcher`)."""

    def embedding_grad(self, indices, gy, input_dim):
        op = "embedding_grad"
        check(op, "indices", indices, dtype="iu")
        check(op, "gy", gy)
        t = float_type(op, "gy", gy)
        if tuple(gy.shape[:-1]) != tuple(indices.shape) or gy.ndim == 0:
            raise ValueError(f"{op}: `gy` must have shape indices.shape + (dim,) = "
                             f"{indices.shape} + (dim,). Received {gy.shape}.")
        dim = gy.shape[-1]
        out = self.xp.zeros((int(input_dim), dim), gy.dtype)
        if gy.size == 0 or out.size == 0:
            return out
        grid, block = self._grid(gy.size)
        self.launch("embedding", f"embedding_grad<{t}>", grid, block,
                    (indices.astype(np.int32, copy=False), gy, out, np.int64(gy.size),
                     np.int32(dim), np.int32(input_dim)))
        return out


class Cuda:
    """`CupyBackend`'s version, falling back to `Twin` for other dtypes."""

    def embedding_grad(self, indices, gy, input_dim):
        if not fusable(gy):
            return super().embedding_grad(indices, gy, input_dim)
        if indices.ndim == 0:  # one id (ops.take with a scalar index): a batch of one row
            indices, gy = indices.reshape(1), gy.reshape(1, *gy.shape)
        return self.kernels.embedding_grad(self._c(indices), self._c(gy), input_dim)
