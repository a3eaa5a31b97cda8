"""The Streamlit cost dashboard (``spotwise dashboard``): pages over the store's market data,
forecasts, plans, policy benchmarks and the executor's ledger."""
