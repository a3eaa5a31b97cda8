"""The dashboard's entry point: ``streamlit run dashboard/app.py`` (``spotwise dashboard``)."""

from __future__ import annotations

import streamlit as st

from spotwise.dashboard.screens import jobs, market, plan, policies, risk


def main() -> None:
    """Set up the page and run the navigation between the screens."""
    st.set_page_config(page_title="Spotwise", page_icon="💸", layout="wide")
    pages = [
        st.Page(market.render, title="Market", url_path="market", default=True),
        st.Page(risk.render, title="Risk", url_path="risk"),
        st.Page(plan.render, title="Plan", url_path="plan"),
        st.Page(policies.render, title="Policies", url_path="policies"),
        st.Page(jobs.render, title="Jobs", url_path="jobs"),
    ]
    st.navigation(pages).run()


main()
