"""Textual syntax of the tensor language: lark grammar, parser and printer."""
