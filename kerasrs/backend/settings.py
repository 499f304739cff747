"""Process-wide settings that Keras keeps in ``keras.config``: the fuzz factor, the image layout,
logging and safety switches, and caps on training length. Plain values, read where they apply."""

_state = {
    "epsilon": 1e-7,
    "image_data_format": "channels_last",
    "interactive_logging": True,
    "traceback_filtering": True,
    "flash_attention": None,  # None: use it where available (Keras's default)
    "unsafe_deserialization": False,
    "max_epochs": None,
    "max_steps_per_epoch": None,
    "auto_jit_compile": False,
}


def epsilon():
    """The fuzz factor added to denominators and used to clip probabilities (default 1e-7)."""
    return _state["epsilon"]


def set_epsilon(value):
    """Set the fuzz factor (a positive float)."""
    _state["epsilon"] = float(value)


def image_data_format():
    """``"channels_last"`` (default) or ``"channels_first"``: the layout layers default to."""
    return _state["image_data_format"]


def set_image_data_format(data_format):
    """Set the default image layout.

    Raises:
        ValueError: for anything but "channels_last" or "channels_first".
    """
    value = str(data_format).lower()
    if value not in ("channels_last", "channels_first"):
        raise ValueError(f"set_image_data_format: `data_format` must be 'channels_first' or "
                         f"'channels_last'. Received: data_format={data_format!r}")
    _state["image_data_format"] = value


def enable_interactive_logging():
    """Progress bars are drawn live (the default) where the output is a terminal or notebook."""
    _state["interactive_logging"] = True


def disable_interactive_logging():
    """Progress is printed as plain lines, never as a live bar."""
    _state["interactive_logging"] = False


def is_interactive_logging_enabled():
    return _state["interactive_logging"]


def enable_traceback_filtering():
    """Kept for Keras compatibility: kerasrs tracebacks are never filtered."""
    _state["traceback_filtering"] = True


def disable_traceback_filtering():
    _state["traceback_filtering"] = False


def is_traceback_filtering_enabled():
    return _state["traceback_filtering"]


def enable_flash_attention():
    """Ask attention layers for a fused kernel where one exists (kerasrs computes the same
    numbers either way)."""
    _state["flash_attention"] = True


def disable_flash_attention():
    _state["flash_attention"] = False


def is_flash_attention_enabled():
    return _state["flash_attention"]


def enable_auto_jit_compile():
    """Make ``compile(jit_compile="auto")`` (the default) trace and replay the training steps,
    falling back to eager steps, with a warning, where a graph cannot capture them. Off by
    default: "auto" then runs eagerly, as Keras's torch backend resolves it, so results never
    change unasked (see `kerasrs.trainers.jit`)."""
    _state["auto_jit_compile"] = True


def disable_auto_jit_compile():
    _state["auto_jit_compile"] = False


def is_auto_jit_compile_enabled():
    return _state["auto_jit_compile"]


def enable_unsafe_deserialization():
    """Let `load_model` rebuild Lambda layers from stored bytecode without ``safe_mode=False``."""
    _state["unsafe_deserialization"] = True


def is_unsafe_deserialization_enabled():
    return _state["unsafe_deserialization"]


def max_epochs():
    """The cap on ``fit(epochs=...)``, or None (no cap)."""
    return _state["max_epochs"]


def set_max_epochs(max_epochs):
    """Cap every ``fit`` at this many epochs (None removes the cap); handy for smoke tests."""
    _state["max_epochs"] = None if max_epochs is None else int(max_epochs)


def max_steps_per_epoch():
    """The cap on steps per epoch in ``fit``, or None."""
    return _state["max_steps_per_epoch"]


def set_max_steps_per_epoch(max_steps_per_epoch):
    _state["max_steps_per_epoch"] = None if max_steps_per_epoch is None else \
        int(max_steps_per_epoch)
