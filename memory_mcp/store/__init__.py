"""Persistence: SQLAlchemy tables, the engine set-up and the MemoryStore repository
(store/repository.py). Importing the package loads nothing: the modules name what they
need, so reading one row type never pulls in every statement."""
