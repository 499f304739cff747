"""Reading and writing IDX files, the format of the MNIST and Fashion-MNIST distributions.

An IDX file is a 4-byte magic number ``00 00 <type> <ndim>``, then ``ndim`` big-endian uint32
dimension sizes, then the values in C order, big-endian (LeCun et al., "THE MNIST DATABASE",
section "FILE FORMATS"). Files ending in ``.gz`` are gzip-compressed. Parsing is one
``np.frombuffer`` over the whole payload: no loop over images or pixels.
"""

import gzip
import os

import numpy as np

# type code -> big-endian dtype of the stored values
IDX_TYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"),
             0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def parse_idx(data, source="<bytes>"):
    """The array stored in IDX bytes (native byte order, writable).

    Args:
        data: bytes-like, a whole uncompressed IDX file.
        source: name used in error messages (a file name).

    Returns:
        NumPy array with the file's shape; uint8 for MNIST images and labels.

    Raises:
        ValueError: for a bad magic number, an unknown type code, or a payload whose size does
            not match the header.
    """
    data = memoryview(data)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in IDX_TYPES:
        head = bytes(data[:4]).hex()
        raise ValueError(f"parse_idx: {source} is not an IDX file (magic number must be "
                         f"00 00 <type in {sorted(IDX_TYPES)}> <ndim>). Received: magic 0x{head}")
    dtype, ndim = IDX_TYPES[data[2]], data[3]
    offset = 4 + 4 * ndim
    if len(data) < offset:
        raise ValueError(f"parse_idx: {source} is truncated inside its header. Received: "
                         f"{len(data)} bytes for a {ndim}-dimensional header")
    shape = tuple(int(n) for n in np.frombuffer(data, ">u4", count=ndim, offset=4))
    expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"parse_idx: {source} should hold {expected} bytes for shape {shape} "
                         f"and dtype {dtype.name}. Received: {len(data)} bytes")
    values = np.frombuffer(data, dtype, offset=offset).reshape(shape)
    return values.astype(dtype.newbyteorder("="))  # a native, writable copy


def read_idx(path):
    """`parse_idx` of a file; ``.gz`` files are decompressed first.

    Raises:
        ValueError: as `parse_idx`, or for a corrupt gzip stream.
        OSError: if the file cannot be read.
    """
    path = os.fspath(path)
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except (EOFError, gzip.BadGzipFile) as e:
        raise ValueError(f"read_idx: {path} is not a valid gzip file. Received: {e}") from None
    return parse_idx(data, source=path)


def write_idx(path, array):
    """Write ``array`` as an IDX file (gzip-compressed when ``path`` ends in ``.gz``).

    Raises:
        ValueError: for a dtype IDX cannot store or more than 255 dimensions.
    """
    array = np.asarray(array)
    codes = {dtype.newbyteorder("="): code for code, dtype in IDX_TYPES.items()}
    code = codes.get(array.dtype.newbyteorder("="))
    if code is None or array.ndim > 255:
        raise ValueError(f"write_idx: IDX stores uint8, int8, int16, int32, float32 or float64 "
                         f"arrays of at most 255 dimensions. Received: dtype {array.dtype}, "
                         f"ndim {array.ndim}")
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    payload = header + array.astype(IDX_TYPES[code], copy=False).tobytes()
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)
