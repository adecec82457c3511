"""The question bank: one module a question (QUESTION and its builder)."""
