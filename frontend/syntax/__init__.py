"""StableHLO text: tokenizer, parser (pretty and generic forms), literals and printer."""
