"""The engines' accumulators (nki.isa's reduce_cmd): which of reset,
reduce and load an instruction does, as the plan's three flags."""

from nki._errors import fail

_COMMANDS = {
    "idle": [False, False, False],
    "reset": [True, False, False],
    "reduce": [False, True, False],
    "reset_reduce": [True, True, False],
    "load_reduce": [False, True, True],
}


def reduce_flags(command):
    """[reset, reduce, load] for reduce_cmd `command` (nki.isa.reduce_cmd's
    names, or the legacy API's numbers 0-3)."""
    if command is None:
        return list(_COMMANDS["idle"])
    if isinstance(command, int) and not isinstance(command, bool):
        names = list(_COMMANDS)
        if 0 <= command < len(names):
            return list(_COMMANDS[names[command]])
    name = getattr(command, "name", command)
    if name not in _COMMANDS:
        fail("err_invalid_operand", f"reduce_cmd={command!r}: one of {sorted(_COMMANDS)}")
    return list(_COMMANDS[name])
