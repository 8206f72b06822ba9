"""Class 210's CloudShop case (notebook 18)."""
