"""Nested structures (lists, tuples, namedtuples, dicts) as Keras's ``keras.tree``.

A structure is a leaf unless it is a list, tuple or dict (``collections.abc.Mapping``); ``None``
is a leaf. Dicts are walked in sorted-key order, as Keras (optree) does, and rebuilt with their
own type. Pure Python: it works on anything, tensors included.
"""

import collections.abc

MAP_TO_NONE = type("MAP_TO_NONE", (), {"__repr__": lambda self: "MAP_TO_NONE"})()
"""Returned by a `traverse` function to put ``None`` at that place in the result."""


def is_nested(structure):
    """True for a list, tuple or mapping (something `flatten` would open)."""
    return isinstance(structure, (list, tuple, collections.abc.Mapping))


def _children(s):
    """``[(key, child)]`` of a nested value, in flattening order."""
    if isinstance(s, collections.abc.Mapping):
        return [(k, s[k]) for k in sorted(s)]
    return list(enumerate(s))


def _rebuild(s, values):
    """A container like ``s`` holding ``values`` (in `_children` order)."""
    if isinstance(s, collections.abc.Mapping):
        items = dict(zip(sorted(s), values))
        d = {k: items[k] for k in s}
        return d if type(s) is dict else type(s)(d)
    if isinstance(s, tuple) and hasattr(s, "_fields"):
        return type(s)(*values)
    return type(s)(values)


def flatten(structure):
    """The leaves of ``structure``, depth first, as a list."""
    if not is_nested(structure):
        return [structure]
    out = []
    for _, child in _children(structure):
        out.extend(flatten(child))
    return out


def flatten_with_path(structure):
    """``[(path, leaf)]`` where ``path`` is the tuple of keys/indices leading to the leaf."""
    if not is_nested(structure):
        return [((), structure)]
    out = []
    for key, child in _children(structure):
        out.extend(((key,) + p, leaf) for p, leaf in flatten_with_path(child))
    return out


def pack_sequence_as(structure, flat_sequence):
    """``flat_sequence`` arranged like ``structure``.

    Raises:
        ValueError: when the number of leaves differs.
    """
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"pack_sequence_as: the structure has {n} leaves but flat_sequence has "
                         f"{len(flat)} items.")
    it = iter(flat)

    def build(s):
        if not is_nested(s):
            return next(it)
        return _rebuild(s, [build(c) for _, c in _children(s)])

    return build(structure)


def assert_same_structure(a, b, check_types=False):
    """Raise ValueError unless ``a`` and ``b`` nest the same way (TypeError for differing
    container types when ``check_types``)."""
    if is_nested(a) != is_nested(b):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs "
                         f"{b!r}")
    if not is_nested(a):
        return
    if check_types and type(a) is not type(b):
        raise TypeError(f"The two structures don't have the same sequence type: {type(a)} vs "
                        f"{type(b)}")
    ka, kb = _children(a), _children(b)
    if [k for k, _ in ka] != [k for k, _ in kb]:
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs "
                         f"{b!r}")
    for (_, x), (_, y) in zip(ka, kb):
        assert_same_structure(x, y, check_types)


def assert_same_paths(a, b):
    """Raise ValueError unless ``a`` and ``b`` have the same set of leaf paths."""
    pa = {p for p, _ in flatten_with_path(a)}
    pb = {p for p, _ in flatten_with_path(b)}
    if pa != pb:
        raise ValueError(f"The two structures don't have the same paths: only in the first "
                         f"{sorted(pa - pb, key=str)}, only in the second "
                         f"{sorted(pb - pa, key=str)}")


def map_structure(func, *structures, none_is_leaf=True):
    """``func`` applied leafwise to one or more structures of the same shape; the result has the
    shape of the first."""
    if not structures:
        raise ValueError("map_structure: at least one structure is required.")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


def map_structure_up_to(shallow_structure, func, *structures):
    """Like `map_structure`, but leaves of ``shallow_structure`` stop the descent: ``func`` gets
    whole sub-structures there."""
    def go(shallow, *subs):
        if not is_nested(shallow):
            return func(*subs)
        keys = [k for k, _ in _children(shallow)]
        parts = [[dict(_children(s))[k] if isinstance(s, collections.abc.Mapping) else s[k]
                  for k in keys] for s in subs]
        return _rebuild(shallow, [go(c, *(p[i] for p in parts))
                                  for i, (_, c) in enumerate(_children(shallow))])

    return go(shallow_structure, *structures)


def map_shape_structure(func, structure):
    """``func`` applied to each shape in ``structure``, where a tuple/list of ints (or None) is a
    shape, not a container."""
    def is_shape(s):
        return isinstance(s, (tuple, list)) and all(isinstance(d, int) or d is None for d in s)

    def go(s):
        if is_shape(s) or not is_nested(s):
            return func(s)
        return _rebuild(s, [go(c) for _, c in _children(s)])

    return go(structure)


def lists_to_tuples(structure):
    """``structure`` with every list turned into a tuple, recursively."""
    if not is_nested(structure):
        return structure
    values = [lists_to_tuples(c) for _, c in _children(structure)]
    if isinstance(structure, list):
        return tuple(values)
    return _rebuild(structure, values)


def traverse(func, structure, top_down=True):
    """Walk every node (containers too). Top down: where ``func`` returns non-None, that value
    replaces the node and its children are not visited; `MAP_TO_NONE` puts ``None``. Bottom up:
    ``func`` sees each node after its children were rebuilt."""
    def fix(v):
        return None if v is MAP_TO_NONE else v

    def down(s):
        r = func(s)
        if r is not None:
            return fix(r)
        if not is_nested(s):
            return s
        return _rebuild(s, [down(c) for _, c in _children(s)])

    def up(s):
        if is_nested(s):
            s = _rebuild(s, [up(c) for _, c in _children(s)])
        r = func(s)
        return s if r is None else fix(r)

    return down(structure) if top_down else up(structure)


__all__ = ["MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten",
           "flatten_with_path", "is_nested", "lists_to_tuples", "map_shape_structure",
           "map_structure", "map_structure_up_to", "pack_sequence_as", "traverse"]
