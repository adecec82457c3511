"""Layer kinds, one module each: a kind owns its parameters, cache or state, FLOPs and what a model asks of it.

A family entry names the module that reads each of its layer parts (`kinds = { linear = "lightning" }`), and the
reader imports only those (derive/architecture/kinds/base.py: kind_module), so a model costs the modules it uses.
"""
