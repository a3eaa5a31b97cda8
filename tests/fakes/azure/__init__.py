"""Azure's Retail Prices API and Resource Graph: what the fakes check requests and answers
against, and what they serve."""
