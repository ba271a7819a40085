"""Traces in: converters from the public traces' own formats to the Aviary trace format
(:mod:`aviary.common.trace`), a synthetic generator, a sampler and streaming summaries (``docs/traces.md``).

Every reader here is a generator over rows and every writer writes as it reads, so memory grows with
what is open at a time (a job whose tasks are still running), not with the trace (DESIGN §10)."""
