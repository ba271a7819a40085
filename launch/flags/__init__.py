"""What the user types: :mod:`.parser` (every command's flags, types, defaults, help, and the checks
between flags) and :mod:`.spec` (the typed :class:`~.spec.ReplaySpec` a replay is told, and
:class:`~.spec.UsageError`). Imports :mod:`..policies` only (a policy's declared parameters)."""
