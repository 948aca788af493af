"""Fails when a C/C++ file includes against the layers of ARCHITECTURE.md.

Between components: torch_plugin -> client -> proto, daemon -> proto; the
daemon and the client never include each other, and only the plugin and
the simulated device (daemon/hal/sim/) include PyTorch's headers. Inside
the daemon: server on top, then session, queue, the subsystems beside each
other (memory, exec, compiler, collectives, config), the HAL, and common at
the bottom (ALLOWED_IN_DAEMON says exactly what each may include).

The layer violations that exist are listed in KNOWN with the issue that
removes them. The list goes stale loudly: a listed include that is gone
fails the check too, so that it is taken off.

Usage: check_includes.py REPOSITORY_ROOT
       check_includes.py --self-test   (the rules against includes made up to break them)
"""

import pathlib
import re
import sys

SOURCES = ("*.h", "*.cc", "*.c", "*.cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)

# The include prefixes by which a component's headers are reached.
PREFIXES = {
    "proto": ("neuron/",),
    "daemon": ("daemon/",),
    "client": ("client/", "neuronrt/", "src/"),
    "torch_plugin": ("csrc/", "torch_plugin/"),
}
# What each component may include of the others (besides itself).
ALLOWED_COMPONENTS = {
    "proto": set(),
    "daemon": {"proto"},
    "client": {"proto"},
    "torch_plugin": {"client", "proto"},
}
TORCH_HEADERS = ("torch/", "ATen/", "c10/", "caffe2/")
TORCH_ALLOWED = ("torch_plugin/", "daemon/hal/sim/")

# Inside the daemon: the subdirectories each may include (besides its own).
ALLOWED_IN_DAEMON = {
    "common": set(),
    "fabric": {"common"},
    "hal": {"common"},
    "memory": {"hal", "common"},
    "exec": {"hal", "common"},
    "compiler": {"hal", "common"},
    "config": {"hal", "common"},
    "collectives": {"fabric", "memory", "hal", "common"},
    "queue": {"collectives", "exec", "memory", "hal", "common"},
    "session": {"queue", "collectives", "exec", "memory", "hal", "common"},
    "server": {"session", "queue", "collectives", "compiler", "config", "exec", "memory",
               "fabric", "hal", "common"},
}
# The wire format of the command ring stays above the device layer.
RING_ABI = "neuron/rtd/abi/command_ring.h"

# (file, include): why it is still there. Issue #42 removes each.
KNOWN = {
    ("torch_plugin/csrc/nki/NkiKernel.cc", "daemon/hal/sim/nki/nki_interpreter.h"):
        "#42: the NKI interpreter becomes a library both sides may use",
}


def component_of(include):
    for component, prefixes in PREFIXES.items():
        if include.startswith(prefixes):
            return component
    return None


def violations_of(path, text):
    """The includes of `path` (relative, with '/') that run against the layers."""
    found = []
    component = path.split("/", 1)[0]
    for bracket, include in INCLUDE.findall(text):
        if include.startswith(TORCH_HEADERS) and not path.startswith(TORCH_ALLOWED):
            found.append((include, "PyTorch's headers outside the plugin and the simulated device"))
            continue
        if bracket == "<":
            continue
        target = component_of(include)
        if target is None or target == component:
            if component == "daemon" and include.startswith("daemon/"):
                found.extend(_daemon_violation(path, include))
            continue
        if target not in ALLOWED_COMPONENTS.get(component, set()):
            found.append((include, f"{component} may not include {target}"))
        elif component == "daemon" and include == RING_ABI and path.startswith("daemon/hal/"):
            found.append((include, "the HAL takes the command ring's wire format"))
    return found


def _daemon_violation(path, include):
    parts = path.split("/")
    if len(parts) < 3:  # daemon/main.cc: the program, above every layer
        return []
    layer, target = parts[1], include.split("/")[1]
    if layer == target or layer not in ALLOWED_IN_DAEMON:
        return []
    if target not in ALLOWED_IN_DAEMON[layer]:
        return [(include, f"daemon/{layer} may not include daemon/{target}")]
    return []


def check(root):
    root = pathlib.Path(root)
    seen = set()
    errors = []
    for component in PREFIXES:
        for pattern in SOURCES:
            for file in sorted((root / component).rglob(pattern)):
                path = file.relative_to(root).as_posix()
                for include, why in violations_of(path, file.read_text(errors="replace")):
                    if (path, include) in KNOWN:
                        seen.add((path, include))
                    else:
                        errors.append(f"{path}: #include {include}: {why}")
    for path, include in sorted(set(KNOWN) - seen):
        errors.append(f"{path}: #include {include} is listed in KNOWN but is gone: "
                      "take it off the list")
    return errors


def self_test():
    """Each rule, broken once and kept once; returns the rules that failed to fire."""
    cases = [
        ("torch_plugin/csrc/aten/X.cc", '#include "daemon/hal/device.h"', True),
        ("torch_plugin/csrc/aten/X.cc", '#include "neuronrt/client.h"', False),
        ("client/src/x.cc", '#include "daemon/server/daemon.h"', True),
        ("client/src/x.cc", '#include "csrc/runtime/Runtime.h"', True),
        ("daemon/server/x.cc", '#include "neuronrt/session.h"', True),
        ("daemon/server/x.cc", '#include "neuron/rtd/v1/admin.pb.h"', False),
        ("proto/neuron/rtd/x.h", '#include "daemon/hal/device.h"', True),
        ("daemon/hal/x.h", '#include "daemon/session/session.h"', True),
        ("daemon/memory/x.h", '#include "daemon/queue/core_queue.h"', True),
        ("daemon/queue/x.h", '#include "daemon/memory/segment.h"', False),
        ("daemon/main.cc", '#include "daemon/server/daemon.h"', False),
        ("daemon/hal/nrt/x.cc", f'#include "{RING_ABI}"', True),
        ("daemon/queue/x.cc", f'#include "{RING_ABI}"', False),
        ("daemon/server/x.cc", "#include <ATen/ATen.h>", True),
        ("client/src/x.cc", "#include <torch/torch.h>", True),
        ("daemon/hal/sim/x.cc", "#include <ATen/ATen.h>", False),
        ("torch_plugin/csrc/x.cc", "#include <c10/core/Device.h>", False),
    ]
    return [(path, text) for path, text, broken in cases
            if bool(violations_of(path, text)) != broken]


def main(argv):
    if argv[1:] == ["--self-test"]:
        failed = self_test()
        for path, text in failed:
            print(f"the rules misjudge {text} in {path}", file=sys.stderr)
        return 1 if failed else 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors = check(argv[1])
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        print(f"{len(errors)} include(s) against the layers (ARCHITECTURE.md, section 2)",
              file=sys.stderr)
        return 1
    print(f"includes follow the layers ({len(KNOWN)} known exceptions, each with its issue)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
