"""Reporting: results with named axes, their analysis and plots. Nothing here re-runs a simulation."""
