"""One module per dashboard page, each with ``render()`` (not named ``pages``: Streamlit would
run that folder as its own multipage app)."""
