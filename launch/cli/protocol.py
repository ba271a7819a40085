"""``aviary protocol schema``: the JSON Schema of every wire message, generated from the message structs
(:func:`aviary.common.protocol_doc.schema`; ``docs/protocol.md`` says the rest of the protocol)."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from ...common.protocol_doc import schema


def print_schema(out: TextIO | None = None) -> int:
    """Print the JSON Schema of every message (each with its tag, by tag) to ``out`` (standard output);
    the same text for a given protocol version. Returns the exit status, 0."""
    (out or sys.stdout).write(json.dumps(schema(), indent=2, ensure_ascii=False) + "\n")
    return 0
