"""The notebooks: strict nbval in the small box, the "try this" panels, the way through the course."""
