"""Reinforcement learning: a gymnasium environment over the simulator and a PPO policy."""
