"""Fleets: many supervised jobs in priority tiers under one budget."""
