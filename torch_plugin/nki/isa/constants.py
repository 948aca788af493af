"""nki.isa.constants: the enumerations instructions take (engine=,
dge_mode=, oob_mode=, reduce_cmd=, perf_mode=) and the NeuronCore versions."""


class engine:
    """Engines an instruction may name (engine=); accepted, and recorded
    only through the instruction's kind on the simulated core."""
    tensor = "tensor"
    vector = "vector"
    scalar = "scalar"
    gpsimd = "gpsimd"
    sync = "sync"
    dma = "dma"
    unknown = "unknown"


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown


class dge_mode:
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"
    unknown = "unknown"


class oob_mode:
    error = "error"
    skip = "skip"


class dma_engine:
    dma = "dma"
    gpsimd = "gpsimd"


class matmul_perf_mode:
    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row_gen3"
    double_row_sw_interleave = "double_row_sw_interleave"


class reduce_cmd:
    """What an instruction's reduction does with its accumulator."""
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class nc_version:
    gen2 = 2
    gen3 = 3
    gen4 = 4
