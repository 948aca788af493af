"""nki.collectives: collectives between the NeuronCores of several kernel
instances (LNC2 and multi-device kernels). The simulated device runs a
kernel's instances one after another on one core, so none of these run here
(docs/nki.md); the names exist so that kernel libraries that import them
load, and each raises NotImplementedError naming itself when called."""

from nki._errors import unsupported_api

_WHY = "a kernel's instances run one after another on one simulated core"


class ReplicaGroup:
    """A group of ranks taking part in a collective (kept, not used)."""

    def __init__(self, *groups, **kwargs):
        self.groups = groups
        self.options = kwargs

    def __repr__(self):
        return f"ReplicaGroup{self.groups}"


def rank_id():
    """This instance's rank: the simulated device runs one."""
    return 0


for _name in ("all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "all_to_all",
              "all_to_all_v", "collective_permute", "collective_permute_implicit",
              "collective_permute_implicit_reduce",
              "collective_permute_implicit_current_processing_rank_id"):
    globals()[_name] = unsupported_api(f"nki.collectives.{_name}", _WHY)
del _name
