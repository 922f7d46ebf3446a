"""Rendering: pandas tables with fixed Styler ids, matplotlib charts, text reports."""
