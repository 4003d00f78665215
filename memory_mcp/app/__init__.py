"""Composition: opening the app (the store, the model, the service, the workers) and
what a way in is handed once it is open."""
