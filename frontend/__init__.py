"""StableHLO front end: parser, typed IR, verifier, printer and lowering to the tensor language.

Public API::

    module = frontend.parse(mlir_text, filename="m.mlir")   # verified StableHLO module
    print(module)                                            # canonical pretty StableHLO
"""
