"""The knowledge-graph profile: the reference server's entities and relations on memories
and links."""
