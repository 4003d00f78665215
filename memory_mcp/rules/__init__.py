"""The memory rules: MemoryService and what it decides (who may see and change a memory,
the policy, versions, listings, links)."""
