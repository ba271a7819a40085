"""Where cores run. The cores do no I/O (DESIGN §2); two drivers execute the same cores: the simulator
(:mod:`.sim`, virtual time in one process) and the real runtime's processes, started here
(:mod:`.process`: one process's entry; :mod:`.local`, :mod:`.hosts` + :mod:`.remote` over SSH,
:mod:`.compose` in containers; :mod:`.up`: a testbed that keeps running), driven by the frontend session
of :mod:`.real`, watched by :mod:`.dashboard`. Imports :mod:`..flags` and :mod:`..policies` only."""
