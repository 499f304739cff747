"""Global settings with Keras's ``keras.config`` names (see `kerasrs.backend.settings`)."""

from kerasrs.backend import floatx, set_floatx  # noqa: F401
from kerasrs.backend import backend  # noqa: F401
from kerasrs.backend.settings import (  # noqa: F401
    disable_auto_jit_compile, disable_flash_attention, disable_interactive_logging,
    disable_traceback_filtering, enable_auto_jit_compile, epsilon, enable_flash_attention,
    enable_interactive_logging, enable_traceback_filtering, enable_unsafe_deserialization,
    image_data_format, is_auto_jit_compile_enabled, is_flash_attention_enabled,
    is_interactive_logging_enabled, is_traceback_filtering_enabled, max_epochs,
    max_steps_per_epoch, set_epsilon, set_image_data_format, set_max_epochs,
    set_max_steps_per_epoch)
from kerasrs.dtype_policies import dtype_policy, set_dtype_policy  # noqa: F401,E402
