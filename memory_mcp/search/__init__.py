"""A search's pipeline below the service: ranking and fusion, exact matches, time filters."""
