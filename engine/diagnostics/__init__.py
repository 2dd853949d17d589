"""Judge diagnostics (issue 5): non-transitivity, structure, cycles, position bias, agreement.

Each module is one concept; ``diagnose`` (added below) dispatches a named table.
"""
