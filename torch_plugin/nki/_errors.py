"""The compiler's errors while a kernel is traced, located at the kernel's
line that caused them."""

import os
import sys

# The nki package and the legacy neuronxcc package beside it.
_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE_DIRS = tuple(os.path.join(_PARENT, name) + os.sep for name in ("nki", "neuronxcc"))


class NkiValidationError(AssertionError):
    """A kernel breaks a rule of the hardware or of NKI. Raised while the
    kernel is traced (its first call with a signature, or torch.compile);
    `code` is the compiler's name for the rule ("err_num_partition_exceed_arch_limit")."""

    def __init__(self, code, message, location=None):
        self.code = code
        self.location = location
        where = f" ({location})" if location else ""
        super().__init__(f"[{code}] {message}{where}")


def _inside_package(filename):
    return os.path.abspath(filename).startswith(_PACKAGE_DIRS)


def user_location():
    """file:line of the innermost frame outside this package (and the legacy
    neuronxcc.nki package over it): the kernel's line that made the call."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _inside_package(frame.f_code.co_filename):
            return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def fail(code, message):
    raise NkiValidationError(code, message, user_location())


def unsupported(name, why="", code="err_unsupported_api"):
    """Raises the error of a documented NKI name the simulated device does
    not run (docs/nki.md lists each, with why)."""
    reason = f": {why}" if why else ""
    raise NotImplementedError(f"{name} is not supported by this simulator{reason} "
                              f"(docs/nki.md lists what is) [{code}]")


def unsupported_api(name, why):
    """A function standing for documented NKI name `name` that raises
    unsupported(name, why) when called; `__nki_unsupported__` holds why."""
    def refuse(*args, **kwargs):
        unsupported(name, why)
    refuse.__name__ = name.rsplit(".", 1)[-1]
    refuse.__qualname__ = refuse.__name__
    refuse.__nki_unsupported__ = why
    refuse.__doc__ = f"Not supported by this simulator: {why}."
    return refuse
