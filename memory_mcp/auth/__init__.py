"""Who an HTTP caller is: bearer tokens and OAuth grants."""
