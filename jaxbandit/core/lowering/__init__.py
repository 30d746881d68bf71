"""How the library's programs are traced, lowered and compiled: the execution options and the trace
context that carries them (``options``), batching rules for solver loops and LAPACK calls
(``batching``), the Threefry hash as the library's CPU programs lower it (``threefry``) and the
compiler options and shared programs of ``library_jit`` (``xla_options``)."""
