"""The dashboard's entry point: ``streamlit run dashboard/app.py`` (``spotwise dashboard``).

Every page has a URL of its own (``/market``, ``/risk``, ``/plan``, ``/policies``, ``/jobs``);
the root URL opens the Market page at ``/market``. (Streamlit serves its default page at the
root only, so the default here is a hidden page that moves on to Market.)
"""

from __future__ import annotations

import streamlit as st

from spotwise.dashboard.screens import jobs, market, plan, policies, risk

# Each page by its URL path: its title in the menu and the function that draws it. (Comments,
# not docstrings: Streamlit writes a bare string of the script on the page.)
PAGES = {
    "market": ("Market", market.render),
    "risk": ("Risk", risk.render),
    "plan": ("Plan", plan.render),
    "policies": ("Policies", policies.render),
    "jobs": ("Jobs", jobs.render),
}
FIRST = "market"  # the page the root URL opens


def main() -> None:
    """Set up the page and run the navigation between the screens."""
    st.set_page_config(page_title="Spotwise", page_icon="💸", layout="wide")
    pages = {
        path: st.Page(render, title=title, url_path=path) for path, (title, render) in PAGES.items()
    }

    def root() -> None:
        st.switch_page(pages[FIRST])

    home = st.Page(root, title="Spotwise", url_path="home", default=True, visibility="hidden")
    st.navigation([home, *pages.values()]).run()


main()
