"""Model descriptions: layer kinds, a model as groups of them, and the family readers that build one."""
