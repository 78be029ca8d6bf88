# A part of the machine's chain of extension types (docs/data-plane.md "Typed fields").
from fakefs.sim.machine_state cimport MachineState

cdef class HostQueue(MachineState):
    pass
