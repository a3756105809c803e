"""Views: how figures are shown (text, plots, HTML, Chrome trace, console)."""
