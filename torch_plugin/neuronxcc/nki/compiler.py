"""neuronxcc.nki.compiler: the legacy API's allocation and scheduling
directives. Tiles are placed by this package's own allocator (docs/nki.md):
direct allocation (`buffer=ncc.sbuf.mod_alloc(...)`) is accepted and gives
an SBUF or PSUM tile placed like any other; the scheduling directives keep
program order, which the simulated core always does."""

import contextlib
import types

from nki._trace import psum as _psum_buffer, sbuf as _sbuf_buffer


def _memory(buffer):
    def auto_alloc():
        return buffer

    def mod_alloc(**placement):
        """(base_addr=, base_partition=, num_par_tiles=, num_free_tiles=;
        PSUM's base_bank=, num_bank_tiles= too): placement, not kept."""
        return buffer

    def alloc(func):
        return buffer

    return types.SimpleNamespace(auto_alloc=auto_alloc, mod_alloc=mod_alloc, alloc=alloc)


sbuf = _memory(_sbuf_buffer)
psum = _memory(_psum_buffer)


def _decorator(func=None, **_options):
    if func is None:
        return lambda f: f
    return func


enable_stack_allocator = force_auto_alloc = skip_middle_end_transformations = _decorator


@contextlib.contextmanager
def allocation_scope():
    yield


@contextlib.contextmanager
def no_reorder():
    yield


@contextlib.contextmanager
def multi_buffer(factor=2):
    yield
