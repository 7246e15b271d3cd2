"""[PK22] has no re-derivation: its claims read the raw tables, verify re-evaluates them, DVC ties tables to code."""

CHECKS = ()
